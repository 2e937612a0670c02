/**
 * One feed-service replica for `npm run bench:feed`, forked by scripts/bench/feed.ts: the service as
 * main.ts builds it (createFeedService, config from the environment: FEED_LANES picks its lanes), in
 * a process of its own so that the benchmark's clients never share its event loop.
 *
 * IPC (process.send / 'message'):
 *   → {type:'ready', address}                 once listening
 *   ← {type:'sign', users}   → {type:'tokens', tokens}   JWTs signed with the replica's secret
 *   ← {type:'reset'}         → {type:'reset'}            clears the stats below
 *   ← {type:'stats'}         → {type:'stats', ...}       event-loop delay (monitorEventLoopDelay),
 *        server-side request time (onRequest → onResponse), feed_cache_reads_total by result, and
 *        the time spent waiting for Postgres and Redis (all calls, summed, and their p99), new pg
 *        connections, GC pauses
 *   ← {type:'stop'}          → exits 0 after a graceful stop
 */
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import Redis from 'ioredis';
import { Client } from 'pg';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createFeedService, loadFeedConfig } from '../../apps/feed-service/src';

type Msg = { type: 'sign'; users: string[] } | { type: 'reset' } | { type: 'stats' } | { type: 'stop' };

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/**
 * Time spent waiting for Postgres and Redis, summed over every call of this process (queueing on
 * the connection included): the per-stage split of a small post's latency while a fan-out runs.
 */
const waits = { pgMs: 0, pgCalls: 0, redisMs: 0, redisCalls: 0 };
let waitTimes: { pg: number[]; redis: number[] } = { pg: [], redis: [] };
function timed<T>(p: T, add: (ms: number) => void): T {
  const start = performance.now();
  if (p && typeof (p as { then?: unknown }).then === 'function') {
    (p as unknown as Promise<unknown>).then(
      () => add(performance.now() - start),
      () => add(performance.now() - start),
    );
  }
  return p;
}
const pgQuery = Client.prototype.query;
const addPg = (ms: number) => ((waits.pgMs += ms), waits.pgCalls++, waitTimes.pg.push(ms));
Client.prototype.query = function (this: Client, ...args: unknown[]) {
  // pg.Pool#query passes a callback (and gets no promise back): time that form too.
  const cb = args[args.length - 1];
  if (typeof cb === 'function') {
    const start = performance.now();
    args[args.length - 1] = (...r: unknown[]) => {
      addPg(performance.now() - start);
      return (cb as (...a: unknown[]) => unknown)(...r);
    };
    return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
  }
  return timed((pgQuery as (...a: unknown[]) => unknown).apply(this, args), addPg);
} as typeof Client.prototype.query;
const redisSend = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
  return timed(
    redisSend.apply(this, args),
    (ms) => ((waits.redisMs += ms), waits.redisCalls++, waitTimes.redis.push(ms)),
  );
};

/** Garbage-collection pauses of this process (count, total, longest): beside the event-loop delay, what stalls it. */
const gc = { count: 0, ms: 0, maxMs: 0 };
/**
 * BENCH_TRACE=<path prefix>: every request (start, duration), GC pause and new pg connection of a
 * phase, written to <prefix>.<pid>.<ms>.json at the next reset: where a tail's requests sit in time
 * (how the cold pool behind the reads' p99 was found, docs/BENCHMARKS.md).
 */
const trace: Array<[string, number, number]> = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gc.count++;
    gc.ms += e.duration;
    gc.maxMs = Math.max(gc.maxMs, e.duration);
    if (process.env.BENCH_TRACE) trace.push(['gc', e.startTime, e.duration]);
  }
}).observe({ entryTypes: ['gc'] });

async function main(): Promise<void> {
  const config = loadFeedConfig(process.env);
  const service = createFeedService(config, { logger: pino({ level: 'error' }), registry: new Registry() });
  const started = new WeakMap<object, number>();
  let serverMs: number[] = [];
  service.app.addHook('onRequest', async (req) => {
    started.set(req, performance.now());
  });
  service.app.addHook('onResponse', async (req) => {
    const t = started.get(req);
    if (t !== undefined && req.url.startsWith('/v1/')) {
      serverMs.push(performance.now() - t);
      if (process.env.BENCH_TRACE) trace.push(['req', t, performance.now() - t]);
    }
  });
  let pgConnects = 0;
  service.pool.on('connect', () => {
    pgConnects++;
    if (process.env.BENCH_TRACE) trace.push(['connect', performance.now(), 0]);
  });
  await service.start();
  const address = await service.app.listen({ port: 0, host: '127.0.0.1' });
  const eld = monitorEventLoopDelay({ resolution: 5 });
  eld.enable();
  const send = (m: unknown) => process.send!(m);
  send({ type: 'ready', address });

  process.on('message', (m: Msg) => {
    void (async () => {
      if (m.type === 'sign') send({ type: 'tokens', tokens: m.users.map((u) => service.app.jwt.sign({ sub: u })) });
      else if (m.type === 'reset') {
        eld.reset();
        serverMs = [];
        Object.assign(waits, { pgMs: 0, pgCalls: 0, redisMs: 0, redisCalls: 0 });
        Object.assign(gc, { count: 0, ms: 0, maxMs: 0 });
        waitTimes = { pg: [], redis: [] };
        pgConnects = 0;
        if (process.env.BENCH_TRACE)
          writeFileSync(
            `${process.env.BENCH_TRACE}.${process.pid}.${Date.now()}.json`,
            JSON.stringify(trace.splice(0)),
          );
        send({ type: 'reset' });
      } else if (m.type === 'stats') {
        const reads = Object.fromEntries(
          (await service.metrics.cacheReads.get()).values.map((v) => [v.labels.result, v.value]),
        );
        const yielded = Object.fromEntries(
          (await service.metrics.fanoutYield.get()).values.map((v) => [v.labels.outcome, v.value]),
        );
        send({
          type: 'stats',
          eldP50: eld.percentile(50) / 1e6,
          eldP99: eld.percentile(99) / 1e6,
          eldMax: eld.max / 1e6,
          serverP50: pct(serverMs, 50),
          serverP99: pct(serverMs, 99),
          requests: serverMs.length,
          reads,
          yielded,
          ...waits,
          gc: { ...gc },
          pgP99: pct(waitTimes.pg, 99),
          pgConnects,
          redisP99: pct(waitTimes.redis, 99),
        });
      } else if (m.type === 'stop') {
        await service.stop();
        await service.app.close();
        process.exit(0);
      }
    })();
  });
  process.on('disconnect', () => process.exit(0));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
