#!/usr/bin/env node
// `npm run test:chaos`: the fault suite e2e/chaos/run.ts, full profile by default (CHAOS_PROFILE=full:
// 10,400 rounds over the whole run, ceil(10,400 / faults) per fault, so every contract type reaches
// at least 10,000 events; the hold times).
// It starts its own RabbitMQ node, Postgres cluster and Redis (e2e/chaos/private-deps.ts), so it
// disturbs nothing else; the setup step only installs dependencies. Its knobs (CHAOS_PROFILE,
// CHAOS_ROUNDS, CHAOS_RATE, CHAOS_HOLD_MS, CHAOS_FAULTS, CHAOS_REPORT) are environment variables;
// see docs/RELIABILITY.md. `npm test` runs the short profile (e2e/chaos.isolated.test.ts).
import { spawn } from 'node:child_process';
import { setup, ROOT } from './setup/index.mjs';
import { runMain } from './setup/log.mjs';

runMain(async () => {
  process.env.NODE_ENV = 'test';
  process.env.CHAOS_PROFILE ??= 'full';
  await setup({ services: false });
  const child = spawn(process.execPath, ['-r', '@swc-node/register', 'e2e/chaos/run.ts'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  // Ctrl-C reaches the child too (same process group); it stops its private servers before exiting.
  const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])));
  return signal ? 1 : code;
});
