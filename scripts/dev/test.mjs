#!/usr/bin/env node
// `npm test`: the same setup as `npm start` (dependencies, services, plugins, database), then the
// whole test suite in two jest runs:
//   1. every test except *.disruptive.test.ts, in parallel (root jest.config.js);
//   2. *.disruptive.test.ts alone with --runInBand: they restart or disconnect the whole broker,
//      so they must not overlap with anything else. Skipped quietly when there are none.
// Extra arguments go to both jest runs: `npm test -- libs/messaging`, `npm test -- -t "retry"`.
// MailDev is not started: tests run their own SMTP servers (see docs/OPERATIONS-LOCAL.md).
// Node built-ins only (dependencies may not be installed yet when this starts).
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { setup, ROOT } from './setup/index.mjs';
import { c, log, runMain } from './setup/log.mjs';

const INFO_ONLY = new Set(['--listTests', '--showConfig', '--help', '-h', '--version', '-v']);
let interrupted = null; // the signal that stopped a jest run, if any
const files = (n) => `${n} file${n === 1 ? '' : 's'}`;

runMain(async () => {
  const args = process.argv.slice(2);
  const infoOnly = args.some((a) => INFO_ONLY.has(a));
  process.env.NODE_ENV = 'test';
  await setup({ services: !infoOnly }); // listing tests needs no services

  const { regular, disruptive } = findTestFiles(ROOT);
  if (!regular.length && !disruptive.length) {
    log.warn('no test files (*.spec.ts, *.test.ts) under apps/ or libs/ yet: nothing to run');
    return 0;
  }
  const filtered = args.length > 0; // a filter may legitimately match only one of the two runs
  const results = [];

  if (regular.length) {
    log.step(`jest: regular suite (${files(regular.length)}, parallel)${filtered ? ` ${c.dim(args.join(' '))}` : ''}`);
    const code = await jest(['--config', 'scripts/dev/setup/jest.regular.config.cjs', ...(filtered ? ['--passWithNoTests'] : []), ...args]);
    results.push(['regular suite', code]);
  }
  if (interrupted) {
    log.warn(`${interrupted}: stopping`);
    return 130;
  }
  if (disruptive.length) {
    log.step(`jest: disruptive suite (${files(disruptive.length)}, --runInBand)`);
    const code = await jest(['--config', 'scripts/dev/setup/jest.disruptive.config.cjs', '--runInBand', ...(filtered ? ['--passWithNoTests'] : []), ...args]);
    results.push(['disruptive suite', code]);
  }

  if (infoOnly) return results.some(([, code]) => code !== 0) ? 1 : 0;
  for (const [name, code] of results) {
    if (code === 0) log.ok(`${name}: passed`);
    else log.error(`${name}: failed (jest exit ${code})`);
  }
  return results.some(([, code]) => code !== 0) ? 1 : 0;
});

/** Test files as the root jest config matches them ({apps,libs}/**\/*.{spec,test}.ts), split in two. */
function findTestFiles(root) {
  const regular = [];
  const disruptive = [];
  const walk = (dir) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) {
        if (e.name !== 'node_modules' && e.name !== 'dist') walk(path.join(dir, e.name));
      } else if (/\.disruptive\.test\.ts$/.test(e.name)) {
        disruptive.push(path.join(dir, e.name));
      } else if (/\.(spec|test)\.ts$/.test(e.name)) {
        regular.push(path.join(dir, e.name));
      }
    }
  };
  walk(path.join(root, 'apps'));
  walk(path.join(root, 'libs'));
  return { regular, disruptive };
}

/** Runs jest with inherited stdio; a signal sent to this process is passed on. Resolves the exit code. */
function jest(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/jest/bin/jest.js'), ...args], {
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
