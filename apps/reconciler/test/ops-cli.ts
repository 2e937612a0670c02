import { execFile } from 'node:child_process';
import path from 'node:path';

const REPO = path.resolve(__dirname, '../../..');

/**
 * `npm run ops` as an operator runs it: the CLI (scripts/ops/ops.ts) spawned as a process, with
 * `env` on top of this process's environment. A spawned process, not an import: an app's tests may
 * not import a script (the module boundaries), and the CLI's exit codes and streams are what an
 * operator sees.
 */
export function runOpsCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-r', '@swc-node/register', 'scripts/ops/ops.ts', ...args],
      { cwd: REPO, env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
