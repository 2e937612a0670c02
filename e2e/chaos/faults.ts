import { setTimeout as sleep } from 'node:timers/promises';
import { databaseFaults, eventually } from '@community/testing';
import { stopApp } from '../harness';
import { clusterFaults } from '../cluster/faults';
import { APPS, backlog, type Deps, type Fleet } from './fleet';
import { P, SUITE } from './profile';

export type Fault = (deps: Deps) => Promise<string>;

/** Each fault: inject, hold, heal; resolves once healed, with a note for the report. */
export function faults(fleet: Fleet): Record<string, Fault> {
  if (SUITE === 'cluster') return clusterSuiteFaults(fleet);
  const f: Record<string, Fault> = {};
  for (const spec of APPS) {
    // P.kills kills at random points of the hold, each once the app has a backlog in its queues (a
    // batch in hand), each waiting for the restarted app to be ready.
    f[`kill -9 ${spec.name} ×${P.kills}`] = async (deps) => {
      const notes: string[] = [];
      for (let k = 0; k < P.kills; k++) {
        await sleep(Math.random() * (P.holdMs / P.kills));
        if (spec.backlog !== 'none')
          await eventually(`${spec.name} has a backlog`, async () => (await backlog(deps, spec)) > 0, 10_000, 50).catch(
            () => undefined,
          );
        const depth = await backlog(deps, spec);
        const running = fleet.app(spec.key);
        fleet.killedOnPurpose.add(running);
        await stopApp(running, 'SIGKILL');
        const killedAt = Date.now();
        await fleet.launch(spec, deps);
        notes.push(`${depth} (ready again in ${((Date.now() - killedAt) / 1000).toFixed(1)} s)`);
      }
      return `backlog at each kill: ${notes.join(', ')}`;
    };
  }
  f['RabbitMQ stop_app/start_app'] = async ({ rabbit }) => {
    await rabbit.ctl('stop_app');
    await sleep(P.holdMs);
    await rabbit.ctl('start_app');
    return '';
  };
  f[`close_all_connections every 5 s`] = async ({ rabbit }) => {
    let n = 0;
    // On a 5 s grid from the start, whatever rabbitmqctl's own start-up takes.
    for (const start = Date.now(); Date.now() < start + P.closeForMs; n++) {
      await rabbit.ctl('close_all_connections', '-q', 'chaos: injected connection loss');
      await sleep(Math.max(0, start + (n + 1) * 5000 - Date.now()));
    }
    return `${n} times`;
  };
  f['Postgres restart -m immediate'] = async ({ pgServer }) => {
    await pgServer.restartImmediate();
    return '';
  };
  f["pg_terminate_backend of the services' connections ×5"] = async ({ dbUrl }) => {
    const db = await databaseFaults(dbUrl);
    let n = 0;
    try {
      for (let i = 0; i < 5; i++) {
        n += await db.terminateAll();
        await sleep(P.holdMs / 5);
      }
    } finally {
      await db.close();
    }
    return `${n} backends`;
  };
  f['SMTP down'] = async ({ smtp }) => {
    await smtp.down();
    await sleep(P.holdMs);
    await smtp.up();
    return '';
  };
  f['SMTP 4xx storm (50 %)'] = async ({ smtp }) => {
    const before = [...smtp.refused.values()].reduce((a, b) => a + b, 0);
    smtp.storm(0.5);
    await sleep(P.holdMs);
    smtp.storm(0);
    return `${[...smtp.refused.values()].reduce((a, b) => a + b, 0) - before} replies 421/451`;
  };
  f['blackhole notification-service ↔ RabbitMQ'] = async ({ amqpProxy }) => {
    amqpProxy.blackhole();
    await sleep(P.holdMs);
    amqpProxy.heal();
    return '';
  };
  f['RabbitMQ memory alarm'] = async ({ rabbit }) => {
    await rabbit.ctl('set_vm_memory_high_watermark', '0.000001');
    await sleep(P.holdMs);
    await rabbit.ctl('set_vm_memory_high_watermark', '0.4');
    return '';
  };
  f['Postgres unreachable (blackhole)'] = async ({ pgProxy }) => {
    pgProxy.blackhole();
    await sleep(P.pgHoldMs);
    pgProxy.heal();
    return '';
  };
  // feed-service is Redis's user: it must stay up, answer feeds from Postgres, and say so in
  // /readyz (details.redis, not a check: docs/FEED.md), then report Redis up again after the heal.
  f['Redis down'] = async ({ redis }) => {
    const redisDetail = async () => {
      const res = await fetch(`${fleet.app('feed').url}/readyz`).catch(() => undefined);
      const body = (await res?.json().catch(() => undefined)) as { details?: { redis?: string } } | undefined;
      return `${res?.status ?? 'no answer'} redis ${body?.details?.redis ?? '(no detail)'}`;
    };
    await redis.down();
    const start = Date.now();
    const seenDown = await eventually(
      'feed-service /readyz reports Redis down',
      async () => ((await redisDetail()).startsWith('200 redis down') ? Date.now() : false),
      P.holdMs,
      100,
    ).catch(() => NaN);
    const whileDown = await redisDetail();
    await sleep(Math.max(0, start + P.holdMs - Date.now()));
    await redis.up();
    const up = Date.now();
    const seenUp = await eventually(
      'feed-service /readyz reports Redis up',
      async () => ((await redisDetail()).startsWith('200 redis up') ? Date.now() : false),
      P.recoverMs,
      100,
    ).catch(() => NaN);
    if (!Number.isFinite(seenDown))
      fleet.faultBreaches.push(`feed-service /readyz did not report Redis down within ${P.holdMs} ms (${whileDown})`);
    if (!Number.isFinite(seenUp))
      fleet.faultBreaches.push(`feed-service /readyz did not report Redis up again (${await redisDetail()})`);
    return `feed-service /readyz while down: "${whileDown}" after ${((seenDown - start) / 1000).toFixed(1)} s; up again ${((seenUp - up) / 1000).toFixed(1)} s after the heal`;
  };
  return f;
}

/** The cluster suite's faults (e2e/cluster/faults.ts), acting on the cluster the run starts. */
function clusterSuiteFaults(fleet: Fleet): Record<string, Fault> {
  const cluster = clusterFaults({
    app: (key) => fleet.app(key),
    breaches: fleet.faultBreaches,
    holdMs: P.holdMs,
    kills: P.kills,
    recoverMs: P.recoverMs,
  });
  return Object.fromEntries(
    Object.entries(cluster).map(([name, fault]) => [
      name,
      (deps: Deps) => {
        if (!deps.cluster) throw new Error('the cluster suite started no cluster');
        return fault({ cluster: deps.cluster, management: deps.management });
      },
    ]),
  );
}
