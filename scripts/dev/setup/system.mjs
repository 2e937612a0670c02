// Running local programs for the setup: finding executables, short commands, daemons. Node built-ins only.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const EXTRA_BIN_DIRS = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

/** Absolute path of an executable on PATH (plus the sbin directories), or null. */
export function findBin(name) {
  const dirs = [...(process.env.PATH || '').split(path.delimiter), ...EXTRA_BIN_DIRS];
  for (const dir of dirs) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      /* next */
    }
  }
  return null;
}

/**
 * The working directory of the commands below: `/`. Several of them switch to another user
 * (rabbitmq-plugins and rabbitmqctl to `rabbitmq`, pg_ctlcluster to `postgres`), who may not be able
 * to read the caller's folder (a `mktemp -d` clone or root's home is mode 0700); Erlang's CLI then
 * prints `File operation error: eacces. Target: .` instead of its output (docs/TESTING.md).
 */
const CLI_CWD = '/';

/** Runs a short command, capturing its output. */
export function run(cmd, args, { timeoutMs = 120_000, inherit = false, env = process.env } = {}) {
  const res = spawnSync(cmd, args, {
    cwd: CLI_CWD,
    encoding: 'utf8',
    stdio: inherit ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    timeout: timeoutMs,
    env,
  });
  const out = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim();
  return { ok: !res.error && res.status === 0, status: res.status, out, error: res.error };
}

/**
 * Starts a daemonising command (rabbitmq-server -detached, redis-server --daemonize, pg_ctlcluster)
 * with its output in a log file, so a forked daemon never holds our pipes. Resolves once the command
 * itself exits (or after 60 s), with the log file path.
 */
export function startDaemon(label, cmd, args) {
  const logFile = path.join(os.tmpdir(), `community-dev-${label}-start.log`);
  const fd = openSync(logFile, 'w');
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: CLI_CWD, stdio: ['ignore', fd, fd], detached: true, env: process.env });
    closeSync(fd);
    const timer = setTimeout(() => resolve({ logFile, status: null }), 60_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      writeFileSync(logFile, `could not run ${cmd}: ${err.message}\n`, { flag: 'a' });
      resolve({ logFile, status: -1 });
    });
    child.once('exit', (status) => {
      clearTimeout(timer);
      resolve({ logFile, status });
    });
    child.unref();
  });
}

export const tail = (file, lines = 15) => {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
};
