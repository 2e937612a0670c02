import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { eventually } from './amqp';
import { freePort } from './net';

/** The repository root (this file is libs/testing/src/app-process.ts). */
const ROOT = path.resolve(__dirname, '../../..');

/**
 * How an app process starts: `npm test` bundles every app once (esbuild) and names the folder in
 * COMMUNITY_TEST_APP_BUNDLES, so each start loads one file instead of compiling each module through
 * @swc-node/register; a jest run of its own (no such folder) compiles on the fly from the sources.
 */
export function appProcessArgs(name: string): string[] {
  const bundles = process.env.COMMUNITY_TEST_APP_BUNDLES;
  const bundle = bundles ? path.join(bundles, name, 'main.js') : undefined;
  if (bundle && existsSync(bundle)) return ['--enable-source-maps', bundle];
  return ['-r', '@swc-node/register', path.join(ROOT, 'apps', name, 'src', 'main.ts')];
}

export interface AppProcess {
  url: string;
  /** Everything it printed, for a failing test's message. */
  output: string[];
  proc: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Another app as a process of its own (as `npm start` runs it), on a free port, with `env` over the
 * test's environment, once its /readyz answers 200. For an app's tests that need a second app: an
 * app may not import another app (the module boundaries), so it runs beside the test, not in it.
 */
export async function startAppProcess(name: string, env: Record<string, string>): Promise<AppProcess> {
  const port = await freePort();
  const proc = spawn(process.execPath, appProcessArgs(name), {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'warn', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  proc.stdout?.on('data', (c: Buffer) => output.push(c.toString()));
  proc.stderr?.on('data', (c: Buffer) => output.push(c.toString()));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    `${name} ready`,
    async () => {
      if (proc.exitCode !== null) throw new Error(`${name} exited ${proc.exitCode}: ${output.join('').slice(-2000)}`);
      const res = await fetch(`${url}/readyz`).catch(() => undefined);
      return res?.status === 200;
    },
    60_000,
    200,
  );
  return {
    url,
    output,
    proc,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      await once(proc, 'exit');
    },
  };
}
