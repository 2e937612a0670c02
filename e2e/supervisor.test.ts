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
  const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script], { timeout: 60_000 });
  return stdout + stderr;
}

it('restarts a crashing app with growing delays, counts the restarts, and stops it on demand', async () => {
  // The child crashes on its first two starts (a counter file tells which start it is), then stays
  // up: by construction the supervisor has exactly two unexpected exits to answer, so exactly two
  // restarts, whatever the machine's speed. The script waits for the third start to be up (a marker
  // file the child writes once it has decided to stay), never for a fixed time.
  const output = await supervise(`
    import { Supervisor } from ${JSON.stringify(PROCESSES)};
    import { loadProjectRules } from ${JSON.stringify(RULES)};
    import { setTimeout as sleep } from 'node:timers/promises';
    await loadProjectRules(${JSON.stringify(ROOT)}); // as npm start's setup does before supervising
    import { existsSync, mkdtempSync } from 'node:fs';
    import { tmpdir } from 'node:os';
    import path from 'node:path';
    const dir = mkdtempSync(path.join(tmpdir(), 'supervisor-'));
    const up = path.join(dir, 'up');
    const child = \`
      const fs = require('node:fs'); const f = ${'${JSON.stringify(path.join(dir, "n"))}'};
      const n = fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) + 1 : 1; fs.writeFileSync(f, String(n));
      console.log('start ' + n + ' at ' + Date.now());
      if (n <= 2) process.exit(3);
      setInterval(() => {}, 1000);
      fs.writeFileSync(${'${JSON.stringify(up)}'}, String(n));\`;
    const s = new Supervisor({ graceMs: 2000, backoffBaseMs: 200, backoffMaxMs: 5000 });
    s.spawn('app', process.execPath, ['-e', child], { restart: true });
    // The condition itself: the child that stays up is running. Polled with a generous deadline.
    for (const deadline = Date.now() + 20_000; !existsSync(up); await sleep(20)) {
      if (Date.now() > deadline) { console.log('TIMEOUT waiting for the child to stay up'); break; }
    }
    console.log('RESTARTS=' + s.restarts('app') + ' ALIVE=' + s.alive('app'));
    await s.stopAll();
    // stopAll has awaited every exit, and an exit while stopping schedules nothing: no timer may be
    // pending, so no restart can come later (no need to wait and see).
    const pending = [...s.children.values()].filter((e) => e.timer).length;
    console.log('AFTER_STOP RESTARTS=' + s.restarts('app') + ' ALIVE=' + s.alive('app') + ' PENDING=' + pending);
  `);
  expect(output).toContain('RESTARTS=2 ALIVE=true');
  expect(output).toContain('AFTER_STOP RESTARTS=2 ALIVE=false PENDING=0');
  expect(output.match(/exited unexpectedly \(code 3\)/g)).toHaveLength(2);
  // The delays the supervisor computed (backoffDelay: base · 2^crashes, no jitter), from its log.
  expect(output).toMatch(/Restarting in 200 ms \(restart #1\)/);
  expect(output).toMatch(/Restarting in 400 ms \(restart #2\)/);
  expect(output).toMatch(/app restarted \(1 restart so far\)/);
  expect(output).toMatch(/app restarted \(2 restarts so far\)/);
  // The restarts really waited (backoff, not a tight loop): a timer never fires before its delay and
  // load only lengthens the gap, so these lower bounds hold on any machine.
  const starts = [...output.matchAll(/start (\d) at (\d+)/g)].map((m) => Number(m[2]));
  expect(starts).toHaveLength(3);
  expect(starts[1] - starts[0]).toBeGreaterThanOrEqual(200);
  expect(starts[2] - starts[1]).toBeGreaterThanOrEqual(400);
});

it('leaves a child without restart: true dead, as before (MailDev)', async () => {
  const output = await supervise(`
    import { Supervisor } from ${JSON.stringify(PROCESSES)};
    import { loadProjectRules } from ${JSON.stringify(RULES)};
    await loadProjectRules(${JSON.stringify(ROOT)}); // as npm start's setup does before supervising
    const s = new Supervisor({ graceMs: 1000, backoffBaseMs: 100 });
    const entry = s.spawn('once', process.execPath, ['-e', 'process.exit(1)']);
    // Its exit is handled synchronously: once 'exited' resolves, a restart would already be scheduled.
    await entry.exited;
    console.log('RESTARTS=' + s.restarts('once') + ' ALIVE=' + s.alive('once') + ' PENDING=' + (entry.timer ? 1 : 0));
  `);
  expect(output).toContain('RESTARTS=0 ALIVE=false PENDING=0');
  expect(output).toContain('restart with npm start');
});

it("rewrites each line through `format` (npm start's readable logs) and hides a quiet child's stdout, never its stderr", async () => {
  const output = await supervise(`
    import { Supervisor } from ${JSON.stringify(PROCESSES)};
    import { loadProjectRules } from ${JSON.stringify(RULES)};
    await loadProjectRules(${JSON.stringify(ROOT)});
    const s = new Supervisor({ graceMs: 1000, backoffBaseMs: 100 });
    const app = s.spawn('app', process.execPath, ['-e', 'console.log(JSON.stringify({ msg: "ready" }))'], { format: (line) => 'FORMATTED ' + JSON.parse(line).msg });
    const mail = s.spawn('mail', process.execPath, ['-e', 'console.log("CHATTER"); console.error("BROKEN")'], { quiet: true });
    await Promise.all([app.exited, mail.exited]);
  `);
  expect(output).toMatch(/app\s+│ FORMATTED ready/);
  expect(output).toMatch(/mail\s+│ BROKEN/);
  expect(output).not.toContain('CHATTER');
});
