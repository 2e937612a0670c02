import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { eventually, freePort } from '@community/testing';

const ROOT = path.resolve(__dirname, '../../../..');

export interface RunningApp {
  url: string;
  output: string[];
  stop(): Promise<void>;
}

/**
 * The real notification-service as a process of its own (as `npm start` runs it: the bundle of
 * COMMUNITY_TEST_APP_BUNDLES when `npm test` built one, else its sources through
 * @swc-node/register), on a free port, against the test's database and vhost. A process rather
 * than its builder in this one: an app may not import another app (the module boundaries).
 */
export async function startNotificationService(env: Record<string, string>): Promise<RunningApp> {
  const port = await freePort();
  const bundles = process.env.COMMUNITY_TEST_APP_BUNDLES;
  const bundle = bundles ? path.join(bundles, 'notification-service', 'main.js') : undefined;
  const args =
    bundle && existsSync(bundle)
      ? ['--enable-source-maps', bundle]
      : ['-r', '@swc-node/register', path.join(ROOT, 'apps/notification-service/src/main.ts')];
  const proc: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'warn', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  proc.stdout?.on('data', (c: Buffer) => output.push(c.toString()));
  proc.stderr?.on('data', (c: Buffer) => output.push(c.toString()));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    'notification-service ready',
    async () => {
      if (proc.exitCode !== null) throw new Error(`exited ${proc.exitCode}: ${output.join('').slice(-2000)}`);
      const res = await fetch(`${url}/readyz`).catch(() => undefined);
      return res?.status === 200;
    },
    60_000,
    200,
  );
  return {
    url,
    output,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      await once(proc, 'exit');
    },
  };
}
