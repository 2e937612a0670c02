#!/usr/bin/env node
// `npm run test:cluster`: the cluster fault suite (e2e/chaos/run.ts with CHAOS_SUITE=cluster), full
// profile by default (CHAOS_PROFILE=full: 3,750 rounds, the 15,000 mentions, over the faults of
// each run; two SIGKILLs of the critical queue's leader; 30 s holds), once with the apps reaching the
// cluster through haproxy and once with AMQP_URL listing the nodes (CLUSTER_ACCESS=haproxy|urls|both,
// default both). It starts its own 3-node RabbitMQ cluster, haproxy, Postgres and Redis, so it disturbs
// nothing else; the setup installs haproxy if it is missing. The other knobs are the chaos suite's
// (CHAOS_PROFILE, CHAOS_ROUNDS, CHAOS_RATE, CHAOS_HOLD_MS, CHAOS_KILLS, CHAOS_FAULTS, CHAOS_REPORT:
// with both accesses, `<name>.haproxy.json` and `<name>.urls.json`); see docs/RELIABILITY.md.
// `npm test` runs the short profile (e2e/cluster.cluster.test.ts).
import { spawn } from 'node:child_process';
import { setup, ROOT } from './setup/index.mjs';
import { ensureTools } from './setup/tools.mjs';
import { log, runMain } from './setup/log.mjs';

runMain(async () => {
  process.env.NODE_ENV = 'test';
  process.env.CHAOS_PROFILE ??= 'full';
  await setup({ services: false });
  ensureTools(['haproxy']);
  const access = process.env.CLUSTER_ACCESS ?? 'both';
  const runs = access === 'both' ? ['haproxy', 'urls'] : [access];
  let failed = 0;
  for (const a of runs) {
    log.step(
      `cluster fault suite, ${process.env.CHAOS_PROFILE} profile, apps through ${a === 'urls' ? 'a list of node URLs' : 'haproxy'}`,
    );
    const report =
      process.env.CHAOS_REPORT && runs.length > 1
        ? process.env.CHAOS_REPORT.replace(/(\.json)?$/, `.${a}.json`)
        : process.env.CHAOS_REPORT;
    const env = {
      ...process.env,
      CHAOS_SUITE: 'cluster',
      CLUSTER_ACCESS: a,
      ...(report ? { CHAOS_REPORT: report } : {}),
    };
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'e2e/chaos/run.ts'], {
      cwd: ROOT,
      stdio: 'inherit',
      env,
    });
    // Ctrl-C reaches the child too (same process group); it stops its private servers before exiting.
    const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])));
    if (signal) return 1;
    if (code !== 0) failed += 1;
  }
  return failed > 0 ? 1 : 0;
});
