/**
 * The read load generator of `npm run bench:feed`, forked by scripts/bench/feed.ts: one process for
 * both the feed API and the raw Redis baseline, so both are measured by the same client process
 * model, and neither shares an event loop with the service.
 *
 * Open loop: request i is due at start + i / rate and its latency counts from when it was due, so a
 * slow server (or a stalled client) shows in the figure instead of slowing the arrivals down.
 * HTTP: node:http with a keep-alive agent (lighter than fetch per request, so the client's own CPU
 * weighs less in the figure). Raw: ZRANGE … BYSCORE REV LIMIT 0 20 then MGET of the bodies, one
 * ioredis connection, the page the API reads.
 *
 * IPC: ← {type:'run', kind:'api'|'raw', rate, seconds, address?, users, tokens?, redisUrl?, prefix?}
 *      → {type:'done', latencies, errors, achieved, eldP99, eldMax}
 */
import { Agent, request } from 'node:http';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';

interface Run {
  type: 'run';
  kind: 'api' | 'raw';
  rate: number;
  seconds: number;
  users: string[];
  address?: string;
  tokens?: string[];
  redisUrl?: string;
  prefix?: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function get(url: URL, token: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (b: Buffer) => parts.push(b));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}`));
        const body = JSON.parse(Buffer.concat(parts).toString()) as { items: unknown[] };
        if (body.items.length !== 20) return reject(new Error(`page of ${body.items.length}`));
        resolve();
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function run(job: Run): Promise<void> {
  let redis: Redis | undefined;
  let call: (i: number) => Promise<void>;
  if (job.kind === 'raw') {
    const r = new Redis(job.redisUrl!, { keyPrefix: job.prefix });
    redis = r;
    call = async (i) => {
      const ids = await r.zrange(
        `f:${job.users[i % job.users.length]}`,
        '+inf',
        '-inf',
        'BYSCORE',
        'REV',
        'LIMIT',
        0,
        20,
      );
      const bodies = await r.mget(ids.map((x) => `p:${x}`));
      if (bodies.length !== 20) throw new Error(`page of ${bodies.length}`);
    };
  } else {
    const urls = job.users.map((u) => new URL(`${job.address}/v1/users/${u}/feed?limit=20`));
    call = (i) => get(urls[i % urls.length], job.tokens![i % urls.length]);
  }
  const eld = monitorEventLoopDelay({ resolution: 5 });
  eld.enable();
  const total = job.rate * job.seconds;
  const latencies: number[] = [];
  let errors = 0;
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / job.rate;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    inflight.push(
      call(i).then(
        () => void latencies.push(performance.now() - due),
        () => void errors++,
      ),
    );
  }
  await Promise.all(inflight);
  const achieved = total / ((performance.now() - start) / 1000);
  eld.disable();
  redis?.disconnect();
  process.send!({ type: 'done', latencies, errors, achieved, eldP99: eld.percentile(99) / 1e6, eldMax: eld.max / 1e6 });
}

process.on('message', (m: Run) => {
  if (m.type === 'run')
    run(m).catch((err) => {
      console.error(err);
      process.exit(1);
    });
});
process.on('disconnect', () => process.exit(0));
