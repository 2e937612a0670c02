import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * `npm start` supervises its apps like a Deployment: an app that exits unexpectedly is restarted
 * with exponential backoff, each restart is logged and counted, and a deliberate stop restarts
 * nothing. The supervisor is plain node ESM (it runs before dependencies are installed), so the
 * test drives it from a node child process, as `npm start` does.
 */
const run = promisify(execFile);
const PROCESSES = path.resolve(__dirname, '../scripts/dev/setup/processes.mjs');
const RULES = path.resolve(__dirname, '../scripts/dev/setup/project-rules.mjs');
const ROOT = path.resolve(__dirname, '..');

async function supervise(script: string): Promise<string> {
  const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script], { timeout: 30_000 });
  return stdout + stderr;
}

it('restarts a crashing app with growing delays, counts the restarts, and stops it on demand', async () => {
  // The child crashes on its first two starts (a counter file tells which start it is), then stays up.
  const output = await supervise(`
    import { Supervisor } from ${JSON.stringify(PROCESSES)};
    import { loadProjectRules } from ${JSON.stringify(RULES)};
    import { setTimeout as sleep } from 'node:timers/promises';
    await loadProjectRules(${JSON.stringify(ROOT)}); // as npm start's setup does before supervising
    import { mkdtempSync } from 'node:fs';
    import { tmpdir } from 'node:os';
    import path from 'node:path';
    const dir = mkdtempSync(path.join(tmpdir(), 'supervisor-'));
    const child = \`
      const fs = require('node:fs'); const f = ${'${JSON.stringify(path.join(dir, "n"))}'};
      const n = fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) + 1 : 1; fs.writeFileSync(f, String(n));
      console.log('start ' + n + ' at ' + Date.now());
      if (n <= 2) process.exit(3);
      setInterval(() => {}, 1000);\`;
    const s = new Supervisor({ graceMs: 2000, backoffBaseMs: 200, backoffMaxMs: 5000 });
    s.spawn('app', process.execPath, ['-e', child], { restart: true });
    await sleep(2500);
    console.log('RESTARTS=' + s.restarts('app') + ' ALIVE=' + s.alive('app'));
    await s.stopAll();
    await sleep(800);
    console.log('AFTER_STOP RESTARTS=' + s.restarts('app') + ' ALIVE=' + s.alive('app'));
  `);
  expect(output).toContain('RESTARTS=2 ALIVE=true');
  expect(output).toContain('AFTER_STOP RESTARTS=2 ALIVE=false');
  expect(output.match(/exited unexpectedly \(code 3\)/g)).toHaveLength(2);
  expect(output).toMatch(/Restarting in 200 ms \(restart #1\)/);
  expect(output).toMatch(/Restarting in 400 ms \(restart #2\)/);
  // The second restart waited longer than the first: backoff, not a tight loop.
  const starts = [...output.matchAll(/start (\d) at (\d+)/g)].map((m) => Number(m[2]));
  expect(starts).toHaveLength(3);
  expect(starts[1] - starts[0]).toBeGreaterThanOrEqual(200);
  expect(starts[2] - starts[1]).toBeGreaterThanOrEqual(400);
});

it('leaves a child without restart: true dead, as before (MailDev)', async () => {
  const output = await supervise(`
    import { Supervisor } from ${JSON.stringify(PROCESSES)};
    import { loadProjectRules } from ${JSON.stringify(RULES)};
    import { setTimeout as sleep } from 'node:timers/promises';
    await loadProjectRules(${JSON.stringify(ROOT)}); // as npm start's setup does before supervising
    const s = new Supervisor({ graceMs: 1000, backoffBaseMs: 100 });
    s.spawn('once', process.execPath, ['-e', 'process.exit(1)']);
    await sleep(800);
    console.log('RESTARTS=' + s.restarts('once') + ' ALIVE=' + s.alive('once'));
  `);
  expect(output).toContain('RESTARTS=0 ALIVE=false');
  expect(output).toContain('restart with npm start');
});
