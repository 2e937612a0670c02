#!/usr/bin/env node
// `npm test`: the same setup as `npm start` (dependencies, services, plugins, database), then the
// whole test suite (apps/, libs/, e2e/) in two jest runs, each selecting its files by its config:
//   1. every test except *.disruptive.test.ts, in parallel (root jest.config.js);
//   2. *.disruptive.test.ts alone with --runInBand: they restart or disconnect the whole broker,
//      so they must not overlap with anything else. Skipped quietly when there are none.
// Extra arguments go to both jest runs: `npm test -- libs/messaging`, `npm test -- -t "retry"`.
// MailDev is not started: tests run their own SMTP servers (see docs/OPERATIONS-LOCAL.md).
// Node built-ins only (dependencies may not be installed yet when this starts).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { setup, ROOT } from './setup/index.mjs';
import { c, log, runMain } from './setup/log.mjs';

const INFO_ONLY = new Set(['--listTests', '--showConfig', '--help', '-h', '--version', '-v']);
// Which files each run takes is decided by jest itself, from these two configs (testMatch and
// testPathIgnorePatterns derived from the root jest.config.js): apps/, libs/ and e2e/ alike.
const SUITES = [
  { name: 'regular suite', config: 'scripts/dev/setup/jest.regular.config.cjs', how: 'parallel', flags: [] },
  { name: 'disruptive suite', config: 'scripts/dev/setup/jest.disruptive.config.cjs', how: '--runInBand', flags: ['--runInBand'] },
];
let interrupted = null; // the signal that stopped a jest run, if any
const files = (n) => `${n} file${n === 1 ? '' : 's'}`;

runMain(async () => {
  const args = process.argv.slice(2);
  const infoOnly = args.some((a) => INFO_ONLY.has(a));
  process.env.NODE_ENV = 'test';
  await setup({ services: !infoOnly, tools: !infoOnly, testHygiene: !infoOnly }); // listing tests needs no services

  if (infoOnly) {
    const codes = [];
    for (const suite of SUITES) codes.push(await jest(['--config', suite.config, ...suite.flags, '--passWithNoTests', ...args]));
    return codes.some((code) => code !== 0) ? 1 : 0;
  }

  const filtered = args.length > 0; // a filter may legitimately match only one of the two runs
  const counts = [];
  for (const suite of SUITES) counts.push(await countTests(suite.config, args));
  if (counts.every((n) => n === 0) && !filtered) {
    log.warn('no test files (*.spec.ts, *.test.ts) under apps/, libs/ or e2e/ yet: nothing to run');
    return 0;
  }

  const results = [];
  for (const [i, suite] of SUITES.entries()) {
    // The disruptive suite restarts or disconnects the whole broker: skipped quietly when it has no files.
    if (counts[i] === 0) continue;
    log.step(`jest: ${suite.name} (${files(counts[i])}, ${suite.how})${filtered ? ` ${c.dim(args.join(' '))}` : ''}`);
    const code = await jest(['--config', suite.config, ...suite.flags, ...(filtered ? ['--passWithNoTests'] : []), ...args]);
    results.push([suite.name, code]);
    if (interrupted) {
      log.warn(`${interrupted}: stopping`);
      return 130;
    }
  }
  for (const [name, code] of results) {
    if (code === 0) log.ok(`${name}: passed`);
    else log.error(`${name}: failed (jest exit ${code})`);
  }
  return results.some(([, code]) => code !== 0) ? 1 : 0;
});

/**
 * How many files jest would run with this config and these arguments (`jest --listTests --json`).
 * A listing that fails counts as -1, so the suite still runs and jest reports the problem itself.
 */
function countTests(config, args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [JEST_BIN, '--config', config, '--listTests', '--json', ...args], {
      cwd: ROOT,
      env: process.env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('error', () => resolve(-1));
    child.once('exit', (code) => {
      try {
        resolve(code === 0 ? JSON.parse(out).length : -1);
      } catch {
        resolve(-1);
      }
    });
  });
}

const JEST_BIN = path.join(ROOT, 'node_modules/jest/bin/jest.js');

/** Runs jest with inherited stdio; a signal sent to this process is passed on. Resolves the exit code. */
function jest(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [JEST_BIN, ...args], {
      cwd: ROOT,
      env: process.env,
      stdio: 'inherit',
    });
    const forward = (signal) => {
      interrupted = signal;
      child.kill(signal);
    };
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
    for (const s of signals) process.on(s, forward);
    child.once('error', (err) => {
      log.error(`could not run jest: ${err.message}`);
      resolve(1);
    });
    child.once('exit', (code, signal) => {
      for (const s of signals) process.off(s, forward);
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}
