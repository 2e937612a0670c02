import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const FIXTURE = path.join(__dirname, 'test-support/service-fixture.ts');

interface Run {
  lines: Record<string, unknown>[];
  exit: Promise<number | null>;
  kill: (signal: NodeJS.Signals) => void;
  waitFor: (msg: RegExp) => Promise<void>;
}

function runFixture(env: Record<string, string>): Run {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', FIXTURE], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  const waiters: { msg: RegExp; resolve: () => void }[] = [];
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffered.slice(0, nl)) as Record<string, unknown>;
      buffered = buffered.slice(nl + 1);
      lines.push(line);
      for (const w of waiters) if (w.msg.test(String(line['msg']))) w.resolve();
    }
  });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    lines,
    exit,
    kill: (signal) => child.kill(signal),
    waitFor: (msg) => {
      if (lines.some((l) => msg.test(String(l['msg'])))) return Promise.resolve();
      const seen = new Promise<void>((resolve) => waiters.push({ msg, resolve }));
      const died = exit.then((code) => {
        throw new Error(`fixture exited (${code}) before logging ${msg}: ${JSON.stringify(lines)}`);
      });
      return Promise.race([seen, died]);
    },
  };
}

const messages = (run: Run) => run.lines.map((l) => l['msg']);

describe('runService (real process)', () => {
  it('on SIGTERM: readiness false → stop() drains → app closes → exit 0', async () => {
    const run = runFixture({ STOP_MS: '200', SHUTDOWN_TIMEOUT_MS: '5000' });
    await run.waitFor(/fixture started/);
    run.kill('SIGTERM');
    expect(await run.exit).toBe(0);

    expect(messages(run).slice(-5)).toEqual([
      'shutting down',
      'stop: draining',
      'stop: drained',
      'app closed',
      'shutdown complete',
    ]);
    // /readyz already answered 503 while stop() was draining.
    expect(run.lines.find((l) => l['msg'] === 'stop: draining')).toMatchObject({ readyzStatus: 503 });
    expect(run.lines.find((l) => l['msg'] === 'shutting down')).toMatchObject({
      service: 'fixture',
      signal: 'SIGTERM',
    });
  });

  it('exits 1 with a log line when draining exceeds the deadline', async () => {
    const run = runFixture({ STOP_MS: '5000', SHUTDOWN_TIMEOUT_MS: '300' });
    await run.waitFor(/fixture started/);
    run.kill('SIGINT');
    expect(await run.exit).toBe(1);
    expect(messages(run)).not.toContain('stop: drained');
    expect(run.lines.at(-1)).toMatchObject({
      level: 'error',
      timeoutMs: 300,
      msg: 'shutdown exceeded its deadline; exiting with code 1',
    });
  });

  it('names an unexpected shutdown trigger at warn level (SIGHUP: not how an orchestrator stops a process)', async () => {
    const run = runFixture({ STOP_MS: '0', SHUTDOWN_TIMEOUT_MS: '5000' });
    await run.waitFor(/fixture started/);
    run.kill('SIGHUP');
    expect(await run.exit).toBe(0);
    expect(run.lines).toContainEqual(
      expect.objectContaining({ level: 'warn', signal: 'SIGHUP', msg: 'shutting down: unexpected trigger' }),
    );
  });

  it('exits 1 with a fatal line when start() fails', async () => {
    const run = runFixture({ FAIL_START: '1' });
    expect(await run.exit).toBe(1);
    expect(run.lines.at(-1)).toMatchObject({
      level: 'fatal',
      msg: 'fixture failed to start',
      err: { message: 'broker unreachable' },
    });
  });
});
