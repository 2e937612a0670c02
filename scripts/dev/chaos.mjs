#!/usr/bin/env node
// `npm run test:chaos`: the same setup as `npm test` (dependencies, services, database), then the
// fault suite e2e/chaos/run.ts, a plain script so neither jest suite of `npm test` picks it up: it
// restarts RabbitMQ and Postgres for everyone on the machine. Not part of `npm test` yet.
// Its knobs (CHAOS_EVENTS, CHAOS_RATE, CHAOS_FAULTS) are environment variables; see docs/RELIABILITY.md.
import { spawn } from 'node:child_process';
import { setup, ROOT } from './setup/index.mjs';
import { runMain } from './setup/log.mjs';

runMain(async () => {
  process.env.NODE_ENV = 'test';
  await setup({ services: true });
  const child = spawn(process.execPath, ['-r', '@swc-node/register', 'e2e/chaos/run.ts'], { cwd: ROOT, stdio: 'inherit' });
  const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])));
  return signal ? 1 : code;
});
