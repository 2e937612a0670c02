// Step 1 of every dev command: make sure node_modules matches package-lock.json.
// Node built-ins only: this runs on a fresh clone before anything is installed.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { log, SetupError } from './log.mjs';

/**
 * Runs `npm ci` when node_modules/.package-lock.json (npm's record of what is installed) is
 * missing or older than package-lock.json. Returns true when it installed something.
 */
export function ensureDependencies(root) {
  const lock = path.join(root, 'package-lock.json');
  const installed = path.join(root, 'node_modules', '.package-lock.json');
  if (!existsSync(lock))
    throw new SetupError('package-lock.json is missing; run the command from the repository root.');

  let reason = null;
  if (!existsSync(installed)) reason = 'node_modules is missing';
  else if (statSync(installed).mtimeMs < statSync(lock).mtimeMs)
    reason = 'package-lock.json changed since the last install';
  if (!reason) {
    log.ok('dependencies installed');
    return false;
  }

  log.step(`installing dependencies (${reason}): npm ci`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const res = spawnSync(npm, ['ci'], { cwd: root, stdio: 'inherit', env: process.env });
  if (res.error) throw new SetupError(`could not run npm ci: ${res.error.message}`);
  if (res.status !== 0) throw new SetupError(`npm ci failed (exit ${res.status}); see its output above.`);
  log.ok('dependencies installed');
  return true;
}
