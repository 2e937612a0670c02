#!/usr/bin/env node
// `npm test`: the same setup as `npm start` (dependencies, services, plugins, database), then the
// whole test suite (apps/, libs/, e2e/, scripts/, infra/) in four jest runs, each selecting its files
// by its config (scripts/dev/setup/jest-suites.cjs):
//   1. every test but the two kinds below, in parallel (root jest.config.js), and BESIDE it
//   2. *.isolated.test.ts one at a time (--runInBand): each starts a RabbitMQ node, a Postgres cluster
//      and a Redis of its own (the fault suite's short profile), so it disturbs nothing shared; it is
//      long and CPU-heavy, and started at once beside run 1 it no longer adds its length to the suite's;
//   3. *.cluster.test.ts (the cluster fault suite's short profile, a RabbitMQ cluster of its own) once
//      run 1 is done: it uses nothing shared, and takes the CPU run 1 leaves while run 2 goes on;
//   4. *.disruptive.test.ts with --runInBand after runs 1 and 2: they restart or disconnect the
//      shared broker, so they must not overlap with anything else that uses it (docs/TESTING.md).
// A run with no files is skipped quietly. Extra arguments go to every run: `npm test -- libs/messaging`,
// `npm test -- -t "retry"`. MailDev is not started: tests run their own SMTP servers (see
// docs/OPERATIONS-LOCAL.md). How the suite is organised and why: docs/TESTING.md.
// Node built-ins only (dependencies may not be installed yet when this starts). It runs on the project's
// Node 22: setup() starts it again on node_modules/.bin/node when started on another, so jest and
// everything spawned below with process.execPath run on it (docs/OPERATIONS-LOCAL.md "Node versions").
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { setup, ROOT } from './setup/index.mjs';
import { c, log, runMain } from './setup/log.mjs';

const INFO_ONLY = new Set(['--listTests', '--showConfig', '--help', '-h', '--version', '-v']);
// Which files each run takes is decided by jest itself, from these configs (testMatch and
// testPathIgnorePatterns derived from the root jest.config.js). Each run starts when the runs it waits for (`after`) are done.
const SUITES = [
  { name: 'regular suite', config: 'scripts/dev/setup/jest.regular.config.cjs', how: 'parallel', flags: [], after: [] },
  {
    name: 'isolated suite',
    config: 'scripts/dev/setup/jest.isolated.config.cjs',
    how: '--runInBand, beside the regular suite',
    flags: ['--runInBand'],
    after: [],
  },
  // After the regular suite: its CPU is free then, while the isolated suite's fault suite still runs
  // for minutes; started at the beginning it would slow both other runs down as much as it gains.
  {
    name: 'cluster suite',
    config: 'scripts/dev/setup/jest.cluster.config.cjs',
    how: '--runInBand, once the regular suite is done',
    flags: ['--runInBand'],
    after: ['regular suite'],
  },
  {
    name: 'disruptive suite',
    config: 'scripts/dev/setup/jest.disruptive.config.cjs',
    how: '--runInBand, after the regular and isolated suites',
    flags: ['--runInBand'],
    after: ['regular suite', 'isolated suite'],
  },
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
    for (const suite of SUITES)
      codes.push(await jest(['--config', suite.config, ...suite.flags, '--passWithNoTests', ...args]));
    return codes.some((code) => code !== 0) ? 1 : 0;
  }

  const filtered = args.length > 0; // a filter may legitimately match only some of the three runs
  const counts = [];
  for (const suite of SUITES) counts.push(await countTests(suite.config, args));
  if (counts.every((n) => n === 0) && !filtered) {
    log.warn('no test files (*.spec.ts, *.test.ts) under apps/, libs/ or e2e/ yet: nothing to run');
    return 0;
  }

  // The e2e tests start the apps as processes: from bundles built once here (esbuild, ~1 s for all),
  // instead of compiling every start through @swc-node/register (e2e/harness.ts startApp).
  const bundles = await bundleAppsForTests();
  process.env.COMMUNITY_TEST_APP_BUNDLES = bundles;
  try {
    return await runSuites(filtered, counts, args);
  } finally {
    await rm(bundles, { recursive: true, force: true });
  }
});

/** dist/test-bundles/<pid>/<app>/main.js for every app, from the sources as they are now. */
async function bundleAppsForTests() {
  const { bundleApp } = await import('./setup/bundle.mjs');
  const { discoverApps } = await import('./setup/apps.mjs');
  const dir = path.join(ROOT, 'dist', 'test-bundles', String(process.pid));
  const started = Date.now();
  await Promise.all(discoverApps(ROOT).map((name) => bundleApp(name, ROOT, path.join(dir, name, 'main.js'))));
  log.ok(
    `apps bundled for the e2e tests in ${((Date.now() - started) / 1000).toFixed(1)} s (${path.relative(ROOT, dir)})`,
  );
  return dir;
}

async function runSuites(filtered, counts, args) {
  // Each run starts once the runs it waits for are done (`after`). The disruptive suite restarts or
  // disconnects the shared broker, so it waits for every run that uses it; the cluster suite never
  // touches it and may overlap it. A run with no files counts as done at once.
  const done = new Map();
  const start = (suite, n) => {
    if (done.has(suite.name)) return done.get(suite.name);
    const promise = Promise.all(suite.after.map((name) => start(...byName(name)))).then(async () => {
      if (n === 0) return null;
      if (interrupted) return 130;
      log.step(`jest: ${suite.name} (${files(n)}, ${suite.how})${filtered ? ` ${c.dim(args.join(' '))}` : ''}`);
      return jest(['--config', suite.config, ...suite.flags, ...(filtered ? ['--passWithNoTests'] : []), ...args]);
    });
    done.set(suite.name, promise);
    return promise;
  };
  const byName = (name) => {
    const i = SUITES.findIndex((suite) => suite.name === name);
    return [SUITES[i], counts[i]];
  };
  const codes = await Promise.all(SUITES.map((suite, i) => start(suite, counts[i])));
  if (interrupted) {
    log.warn(`${interrupted}: stopping`);
    return 130;
  }
  const results = SUITES.map((suite, i) => [suite.name, codes[i]]).filter(([, code]) => code !== null);
  for (const [name, code] of results) {
    if (code === 0) log.ok(`${name}: passed`);
    else log.error(`${name}: failed (jest exit ${code})`);
  }
  return results.some(([, code]) => code !== 0) ? 1 : 0;
}

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
