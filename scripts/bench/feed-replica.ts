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
 *        server-side request time (onRequest → onResponse), feed_cache_reads_total by result
 *   ← {type:'stop'}          → exits 0 after a graceful stop
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createFeedService, loadFeedConfig } from '../../apps/feed-service/src';

type Msg = { type: 'sign'; users: string[] } | { type: 'reset' } | { type: 'stats' } | { type: 'stop' };

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

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
    if (t !== undefined && req.url.startsWith('/v1/')) serverMs.push(performance.now() - t);
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
        send({ type: 'reset' });
      } else if (m.type === 'stats') {
        const reads = Object.fromEntries((await service.metrics.cacheReads.get()).values.map((v) => [v.labels.result, v.value]));
        send({
          type: 'stats',
          eldP50: eld.percentile(50) / 1e6,
          eldP99: eld.percentile(99) / 1e6,
          eldMax: eld.max / 1e6,
          serverP50: pct(serverMs, 50),
          serverP99: pct(serverMs, 99),
          requests: serverMs.length,
          reads,
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
