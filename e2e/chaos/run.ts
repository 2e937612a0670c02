import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { databaseFaults, eventually, tcpProxy, type TcpProxy } from '@community/testing';
import { freePort, http, jwt, startApp, startSmtpSink, stopApp, type App, type SmtpSink } from '../harness';
import {
  checkInvariants,
  pendingWork,
  queueDepths,
  queueDepthsFast,
  readQueue,
  type BrokerMessage,
  type FeedReaders,
  type Figures,
  type Management,
} from './checks';
import { cast as makeCast, EVENT_TYPES, Ledger, runLoad } from './load';
import {
  createMigratedDatabase,
  startPrivatePostgres,
  startPrivateRabbit,
  startPrivateRedis,
  type PrivatePostgres,
  type PrivateRabbit,
  type PrivateRedis,
} from './private-deps';
import { startCluster, type Cluster } from '../cluster/cluster';
import { clusterFaults, leadersByNode } from '../cluster/faults';

/**
 * The fault suite (`npm run test:chaos`; short profile in `npm test` via e2e/chaos.isolated.test.ts).
 *
 * It starts its OWN RabbitMQ node, Postgres cluster and Redis (private-deps.ts) and an SMTP sink, so
 * the machine-wide faults (broker stop_app, memory alarm, database restart, Redis down) hit nobody
 * else. The apps run as real processes (e2e/harness.ts); notification-service reaches the broker and
 * every app reaches Postgres through TCP proxies the suite controls (@community/testing's tcpProxy), for the
 * blackhole faults. A load of "rounds" (load.ts: nine requests that produce every event type the
 * demo API emits) goes through the demo API; one fault at a time is injected once a third of the
 * phase's rounds are done, held, healed while the load goes on; then the system drains and the
 * invariants are checked over everything acknowledged so far (checks.ts). Exits 1 on any breach.
 *
 * CHAOS_SUITE=cluster runs the cluster fault suite instead (`npm run test:cluster`; short profile in
 * `npm test` via e2e/cluster.isolated.test.ts): the same load, ledger and invariants against a
 * 3-node RabbitMQ cluster of its own (e2e/cluster/cluster.ts), reached through haproxy
 * (CLUSTER_ACCESS=haproxy) or with AMQP_URL listing the nodes (CLUSTER_ACCESS=urls), and the
 * cluster's faults (e2e/cluster/faults.ts) instead of the single node's.
 *
 * CHAOS_PROFILE: short (CI, default) | mid | full (≥ 10,000 of every one-per-round event type over
 * the whole run: ceil(10,400 / faults selected) rounds per fault). Overrides:
 * CHAOS_ROUNDS (rounds per fault), CHAOS_RATE (rounds per second), CHAOS_HOLD_MS (scale of the
 * holds), CHAOS_KILLS (SIGKILLs per kill fault), CHAOS_FAULTS (comma-separated subset of the fault names), CHAOS_REPORT (a JSON file to write).
 */
interface Profile {
  rounds: number;
  /** Rounds of the whole run, spread over the selected faults (ceil(total / faults) each); CHAOS_ROUNDS overrides. */
  totalRounds?: number;
  rate: number;
  /** How long a fault is held ("30 s" in the issue). */
  holdMs: number;
  /** SIGKILLs of each app per kill fault, each with work in hand. The short profile kills once: a second
   * and third kill repeat the same fault (kill, restart, redelivery) and cost a restart each. */
  kills: number;
  /** Postgres unreachable ("60 s"). */
  pgHoldMs: number;
  /** close_all_connections every 5 s for this long ("a minute"). */
  closeForMs: number;
  /** How long to wait for the first effect after a heal, and for the drain, before calling it a failure. */
  recoverMs: number;
  drainMs: number;
  /** Extra environment of the apps: shorter leases and timeouts so the short profile's drains fit in CI. */
  appEnv: Record<string, string>;
}

const SHORT_TIMEOUTS = {
  // The kill of email-service leaves its in-flight sends leased; a 10 s lease (default 2 min) lets
  // the short profile drain in seconds. It must exceed 2 × connection + socket timeout (config check).
  EMAIL_LEASE_MS: '10000',
  SMTP_CONNECTION_TIMEOUT_MS: '2000',
  SMTP_SOCKET_TIMEOUT_MS: '5000',
  SMTP_BREAKER_PROBE_MAX_MS: '2000',
};
const PROFILES: Record<string, Profile> = {
  short: {
    rounds: 9,
    rate: 3,
    holdMs: 4_000,
    kills: 1,
    pgHoldMs: 6_000,
    closeForMs: 10_000,
    recoverMs: 120_000,
    drainMs: 240_000,
    appEnv: SHORT_TIMEOUTS,
  },
  mid: {
    rounds: 150,
    rate: 8,
    holdMs: 15_000,
    kills: 3,
    pgHoldMs: 30_000,
    closeForMs: 30_000,
    recoverMs: 300_000,
    drainMs: 600_000,
    appEnv: SHORT_TIMEOUTS,
  },
  // 10,400 rounds over the whole run (800 for each of 13 faults, 740 of 14), so that every event
  // type a round produces once reaches ≥ 10,000 whatever CHAOS_FAULTS selects; the holds of the issue; product defaults.
  full: {
    rounds: 0,
    totalRounds: 10_400,
    rate: 10,
    holdMs: 30_000,
    kills: 3,
    pgHoldMs: 60_000,
    closeForMs: 60_000,
    recoverMs: 600_000,
    drainMs: 900_000,
    appEnv: {},
  },
};
const SUITE = process.env.CHAOS_SUITE ?? 'chaos';
if (SUITE !== 'chaos' && SUITE !== 'cluster') throw new Error(`CHAOS_SUITE: "${SUITE}" is not chaos or cluster`);
const ACCESS = process.env.CLUSTER_ACCESS ?? 'haproxy';
if (ACCESS !== 'haproxy' && ACCESS !== 'urls') throw new Error(`CLUSTER_ACCESS: "${ACCESS}" is not haproxy or urls`);
// The cluster suite's full profile: the issue's 15,000 mentions (4 per round) over the whole run,
// with two SIGKILLs of the critical queue's leader; its holds are a node down for 30 s.
if (SUITE === 'cluster') {
  PROFILES.full = { ...PROFILES.full, totalRounds: 3_750, kills: 2 };
  PROFILES.mid = { ...PROFILES.mid, kills: 2 };
  PROFILES.short = { ...PROFILES.short, kills: 1 };
}
const PROFILE_NAME = process.env.CHAOS_PROFILE ?? 'short';
const base = PROFILES[PROFILE_NAME];
if (!base) throw new Error(`CHAOS_PROFILE: "${PROFILE_NAME}" is not one of ${Object.keys(PROFILES).join(', ')}`);
const P: Profile = {
  ...base,
  rounds: Number(process.env.CHAOS_ROUNDS ?? base.rounds),
  rate: Number(process.env.CHAOS_RATE ?? base.rate),
  holdMs: Number(process.env.CHAOS_HOLD_MS ?? base.holdMs),
  kills: Number(process.env.CHAOS_KILLS ?? base.kills),
};
const JWT_SECRET = 'chaos-secret-chaos-secret-chaos-secret';

/**
 * The apps under test, data-driven: adding one is one entry. Every app gets the same dependency
 * URLs (PORT, DATABASE_URL, AMQP_URL, REDIS_URL, ...); `amqpViaProxy` puts the blackhole-able proxy
 * between it and the broker; `backlog` is what it consumes (a kill waits for a backlog there: mid-batch).
 */
interface AppSpec {
  key: string;
  name: string;
  amqpViaProxy?: boolean;
  /** Where its work in hand shows: these queues, the outbox (a producer), or nowhere the suite can see (kill at random). */
  backlog: 'outbox' | 'none' | string[];
  env?: (ports: Record<string, number>) => Record<string, string>;
}
const APPS: AppSpec[] = [
  {
    key: 'notifications',
    name: 'notification-service',
    amqpViaProxy: true,
    backlog: ['notification-service.critical', 'notification-service.standard'],
  },
  { key: 'email', name: 'email-service', backlog: ['email-service.send', 'email-service.send-critical'] },
  { key: 'api', name: 'demo-community-api', backlog: 'outbox' },
  // Its recount jobs run against the live counters the invariants check; its queue is idle under this load.
  {
    key: 'reconciler',
    name: 'reconciler',
    backlog: 'none',
    env: (p) => ({ BREAKER_METRICS_URLS: `http://127.0.0.1:${p.email}/metrics` }),
  },
  // The feed projections, fan-out and the cache in the private Redis (docs/FEED.md).
  {
    key: 'feed',
    name: 'feed-service',
    backlog: ['feed-service.activity', 'feed-service.fanout', 'feed-service.backfill'],
  },
];

interface Deps {
  /** The broker as the suite's checks and the single-node faults use it (the cluster: any node, through haproxy). */
  rabbit: Pick<PrivateRabbit, 'ctl' | 'amqpUrl' | 'amqpPort' | 'managementUrl'>;
  /** The cluster suite's cluster; every app's AMQP_URL is then `appAmqpUrl` (haproxy, or the node list). */
  cluster?: Cluster;
  appAmqpUrl?: string;
  pgServer: PrivatePostgres;
  redis: PrivateRedis;
  smtp: SmtpSink;
  amqpProxy: TcpProxy;
  pgProxy: TcpProxy;
  dbUrl: string;
  /** The suite's own pool, straight to the server (not through the proxy). */
  db: pg.Pool;
  management: Management;
}

const apps = new Map<string, App>();
/** What a fault's own checks found wrong during the current phase (reported as breaches of its row). */
const faultBreaches: string[] = [];
const killedOnPurpose = new Set<App>();
const unexpectedExits: string[] = [];
let appEnv: Record<string, string> = {};
const ports: Record<string, number> = {};

async function launch(spec: AppSpec, deps: Deps): Promise<void> {
  const amqp =
    deps.appAmqpUrl ??
    (spec.amqpViaProxy ? `amqp://guest:guest@127.0.0.1:${deps.amqpProxy.port}` : deps.rabbit.amqpUrl);
  const app = await startApp(spec.name, ports[spec.key], { ...appEnv, AMQP_URL: amqp, ...(spec.env?.(ports) ?? {}) });
  app.proc.on('exit', (code, signal) => {
    if (killedOnPurpose.has(app) || cleaning) return;
    // Its whole output goes to a file (a log line can be long enough to push the cause out of the tail).
    const file = path.join(tmpdir(), `chaos-exit-${app.name}-${Date.now()}.log`);
    void writeFile(file, app.output.join('')).catch(() => undefined);
    const what = `${app.name} exited (${signal ?? code}; whole output in ${file}): ${app.output.join('').slice(-3000)}`;
    unexpectedExits.push(what);
    console.error(`[chaos] UNEXPECTED EXIT (a breach; restarted as a supervisor would): ${what}`);
    // Restarted, as `npm start` and a Deployment would, so the rest of the run still measures something.
    void sleep(1000)
      .then(() => (cleaning ? undefined : launch(spec, deps)))
      .catch((err: unknown) => console.error(`[chaos] restarting ${app.name}:`, err));
  });
  apps.set(spec.key, app);
}

function app(key: string): App {
  const a = apps.get(key);
  if (!a) throw new Error(`app ${key} not started`);
  return a;
}

/** Work in the app's hands: messages in its queues, or (the API) outbox rows its relay has yet to publish. */
async function backlog(deps: Deps, spec: AppSpec): Promise<number> {
  if (spec.backlog === 'none') return 0;
  if (spec.backlog === 'outbox') return (await pendingWork(deps.db).catch(() => ({ outbox: 0 }))).outbox;
  const depths = await queueDepthsFast(deps.management).catch(() => new Map<string, number>());
  return spec.backlog.reduce((n, q) => n + (depths.get(q) ?? 0), 0);
}

type Fault = (deps: Deps) => Promise<string>;

/** Each fault: inject, hold, heal; resolves once healed, with a note for the report. */
function faults(): Record<string, Fault> {
  if (SUITE === 'cluster') return clusterSuiteFaults();
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
        const running = app(spec.key);
        killedOnPurpose.add(running);
        await stopApp(running, 'SIGKILL');
        const killedAt = Date.now();
        await launch(spec, deps);
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
      const res = await fetch(`${app('feed').url}/readyz`).catch(() => undefined);
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
      faultBreaches.push(`feed-service /readyz did not report Redis down within ${P.holdMs} ms (${whileDown})`);
    if (!Number.isFinite(seenUp))
      faultBreaches.push(`feed-service /readyz did not report Redis up again (${await redisDetail()})`);
    return `feed-service /readyz while down: "${whileDown}" after ${((seenDown - start) / 1000).toFixed(1)} s; up again ${((seenUp - up) / 1000).toFixed(1)} s after the heal`;
  };
  return f;
}

/** The cluster suite's faults (e2e/cluster/faults.ts), acting on the cluster the run starts. */
function clusterSuiteFaults(): Record<string, Fault> {
  const cluster = clusterFaults({
    app,
    breaches: faultBreaches,
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

interface Row extends Omit<Figures, 'events' | 'examples'> {
  fault: string;
  note: string;
  rounds: number;
  requests: number;
  refused: string;
  firstEffectMs: number;
  drainedMs: number;
  backlogMs: number;
  exits: number;
  notReady: string;
  faultBreaches: string[];
  ledgerEvents: number;
}

/** Drained: no queue (DLQs aside) holds a message, no outbox row unsent, no email pending, no fan-out unfinished. */
async function drainedNow(deps: Deps, db: pg.Pool): Promise<string | undefined> {
  // The management API's figures first (cheap, up to a second old); the exact count once they say empty.
  const busyIn = (depths: Map<string, number>) =>
    [...depths].filter(([q, n]) => !q.endsWith('.dlq') && n !== 0).map(([q, n]) => `${q}=${n}`);
  // The database first: a row the relay marks sent after this read has its message in a queue by
  // the queue reads below (it is marked only after the broker's confirm).
  const work = await pendingWork(db).catch((err: unknown) => err as Error);
  if (work instanceof Error) return `database: ${work.message}`;
  if (work.outbox > 0 || work.emails > 0 || work.fanouts > 0)
    return `${work.outbox} outbox rows unsent, ${work.emails} emails pending, ${work.fanouts} fan-out jobs/chunks unfinished`;
  const fast = await queueDepthsFast(deps.management).catch((err: unknown) => err as Error);
  if (fast instanceof Error) return `management API: ${fast.message}`;
  if (busyIn(fast).length > 0) return `queues ${busyIn(fast).join(', ')} (management API)`;
  const exact = await queueDepths(deps.rabbit.ctl, '/').catch((err: unknown) => err as Error);
  if (exact instanceof Error) return `rabbitmqctl: ${exact.message}`;
  // An unknown depth (NaN) is busy; so is a queue the management API lists and rabbitmqctl does not.
  const busy = busyIn(exact).concat(
    [...fast.keys()].filter((q) => !exact.has(q)).map((q) => `${q} missing from list_queues`),
  );
  if (busy.length > 0) return `queues ${busy.join(', ')} (rabbitmqctl)`;
  return undefined;
}

/**
 * Waits until the system is drained on two consecutive polls at least DRAIN_CONFIRM_MS apart, with
 * nothing busy in between: one empty reading can be a moment between two hops (a message acked by
 * one consumer whose next publish is not routed yet, a quorum queue whose count is not back after
 * start_app, a delayed retry about to come back).
 */
const DRAIN_CONFIRM_MS = 6000;
/** How long after the drain each app has to answer /readyz 200 again (a breach after that). */
const READY_WITHIN_MS = 30_000;

async function drain(deps: Deps, db: pg.Pool, timeoutMs: number): Promise<number> {
  let emptySince: number | undefined;
  let last = '';
  try {
    return await eventually(
      'drained (queues, outbox, emails, fan-outs)',
      async () => {
        const busy = await drainedNow(deps, db);
        if (busy !== undefined) {
          // An unknown depth is what an earlier version of this drain read as 0: worth seeing in the log.
          if (/NaN|missing/.test(busy) && busy !== last) console.log(`[chaos]   drain: depth unknown: ${busy}`);
          last = busy;
          emptySince = undefined;
          return false;
        }
        emptySince ??= Date.now();
        return Date.now() - emptySince >= DRAIN_CONFIRM_MS ? emptySince : false;
      },
      timeoutMs,
      250,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last seen busy: ${last}`);
  }
}

async function readDlqs(deps: Deps): Promise<BrokerMessage[]> {
  const depths = await queueDepths(deps.rabbit.ctl, '/');
  const out: BrokerMessage[] = [];
  for (const [q, n] of depths) if (q.endsWith('.dlq') && n > 0) out.push(...(await readQueue(deps.management, q, n)));
  return out;
}

async function main(): Promise<number> {
  const all = faults();
  // The cluster suite's short profile (in `npm test`) takes the two faults that fit its budget; the
  // rolling restart (about 90 s of restarts) and the partition (about 30 s) are the full profile's (docs/TESTING.md).
  const defaults =
    SUITE === 'cluster' && PROFILE_NAME === 'short'
      ? Object.keys(all).filter((f) => !f.startsWith('rolling restart') && !f.startsWith('minority partition'))
      : Object.keys(all);
  const selected = process.env.CHAOS_FAULTS ? process.env.CHAOS_FAULTS.split(',').map((s) => s.trim()) : defaults;
  const unknown = selected.filter((f) => !all[f]);
  if (unknown.length > 0)
    throw new Error(
      `CHAOS_FAULTS: unknown fault(s) ${JSON.stringify(unknown)}; known: ${Object.keys(all).join(' | ')}`,
    );
  if (process.env.CHAOS_ROUNDS === undefined && base.totalRounds)
    P.rounds = Math.ceil(base.totalRounds / selected.length);
  console.log(
    `[chaos] profile ${PROFILE_NAME}: ${P.rounds} rounds per fault at ${P.rate}/s, holds ${P.holdMs} ms (Postgres unreachable ${P.pgHoldMs} ms), ${selected.length} faults`,
  );

  const t0 = Date.now();
  const rows: Row[] = [];
  let db: pg.Pool | undefined;
  try {
    // Each registered for cleanup as soon as it is up (a SIGTERM during the others' start-up stops it;
    // one that comes up after the cleanup began is stopped at once).
    const own = <T extends { stop(): Promise<void> }>(s: T): T => {
      if (cleaning) void s.stop();
      else started.push(s);
      return s;
    };
    const [rabbit, pgServer, redis, smtp] = await Promise.all([
      startBroker().then(own),
      startPrivatePostgres().then(own),
      startPrivateRedis().then(own),
      startSmtpSink().then((sink) => (own({ stop: () => sink.close() }), sink)),
    ]);
    const dbUrl = await createMigratedDatabase(pgServer.url, 'community');
    const amqpProxy = await tcpProxy({ host: '127.0.0.1', port: rabbit.amqpPort });
    const pgProxy = await tcpProxy({ host: '127.0.0.1', port: pgServer.port });
    await Promise.all([amqpProxy.open(), pgProxy.open()]);
    started.push({ stop: () => amqpProxy.close() }, { stop: () => pgProxy.close() });
    db = new pg.Pool({ connectionString: dbUrl, max: 3, application_name: 'chaos-checker' });
    db.on('error', () => undefined); // the Postgres faults hit this pool too; its queries are retried by the polling below
    const deps: Deps = {
      rabbit,
      cluster: rabbit.cluster,
      appAmqpUrl: rabbit.appAmqpUrl,
      pgServer,
      redis,
      smtp,
      amqpProxy,
      pgProxy,
      dbUrl,
      db,
      management: { url: rabbit.managementUrl, vhost: '/' },
    };
    if (rabbit.cluster) leaders.community = await importedLeaders(rabbit.cluster);
    console.log(
      `[chaos] private RabbitMQ ${rabbit.node} (${rabbit.amqpUrl}), Postgres ${pgServer.url}, Redis ${redis.url}, SMTP :${smtp.port} — ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );

    for (const spec of APPS) ports[spec.key] = await freePort();
    const appDbUrl = new URL(dbUrl);
    appDbUrl.port = String(pgProxy.port);
    appEnv = {
      ...P.appEnv,
      RABBITMQ_MANAGEMENT_URL: rabbit.managementUrl,
      DATABASE_URL: appDbUrl.toString(),
      REDIS_URL: redis.url,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      SMTP_RATE_PER_SECOND: '0',
      JWT_SECRET,
      NOTIFICATION_SERVICE_URL: `http://127.0.0.1:${ports.notifications}`,
      UNSUBSCRIBE_BASE_URL: `http://127.0.0.1:${ports.email}`,
      DEMO_TRAFFIC_RATE: '0',
      // Thousands of writes from one address and a few users: the demo API's write rate limit would answer 429.
      DEMO_WRITE_RATE_LIMIT: '1000000',
    };
    // notification-service first: it declares the topology the others publish into; the rest together.
    await launch(APPS[0], deps);
    await Promise.all(APPS.slice(1).map((spec) => launch(spec, deps)));
    const api = () => app('api').url;

    const runId = `c${randomBytes(3).toString('hex')}`;
    const cast = makeCast(`${runId}-`);
    for (const id of Object.values(cast).flat()) {
      const res = await http('POST', `${api()}/v1/users`, { id, email: `${id}@example.test`, displayName: id });
      if (res.status !== 201) throw new Error(`creating ${id} answered ${res.status}`);
    }
    // The readers follow every poster and read their feed once: fan-out writes their (live) feeds.
    // A token per read: a token lives 10 minutes, and a full run reads the feeds long after its set-up
    // (the cluster suite's URL-list run failed its last check on "The token has expired").
    const token = (reader: string) => `Bearer ${jwt(JWT_SECRET, { sub: reader })}`;
    for (const reader of cast.readers) {
      for (const poster of cast.posters) {
        const res = await http('POST', `${api()}/v1/users/${poster}/follow`, undefined, { 'x-user-id': reader });
        if (res.status !== 201) throw new Error(`${reader} following ${poster} answered ${res.status}`);
      }
    }
    await drain(deps, db, 60_000);
    // The apps declared the topology of vhost `/` at run time, each through whichever node it reached.
    if (rabbit.cluster) leaders['/'] = await checkSpread('/', await leadersByNode(deps.management));
    const feed: FeedReaders = {
      readers: cast.readers,
      async readFeed(userId) {
        const ids: string[] = [];
        for (let cursor: string | null = null, pages = 0; ; pages++) {
          if (pages > 10_000) throw new Error(`the feed of ${userId} did not end after ${pages} pages`);
          const qs: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
          const res = await http<{ items: Array<{ postId: string }>; nextCursor: string | null }>(
            'GET',
            `${app('feed').url}/v1/users/${userId}/feed?limit=100${qs}`,
            undefined,
            { authorization: token(userId) },
          );
          if (res.status !== 200)
            throw new Error(`GET the feed of ${userId}: ${res.status} ${JSON.stringify(res.body)}`);
          ids.push(...res.body.items.map((i) => i.postId));
          cursor = res.body.nextCursor;
          if (!cursor) return ids;
        }
      },
    };
    for (const reader of cast.readers) await feed.readFeed(reader);
    const ledger = new Ledger();
    for (const reader of cast.readers)
      for (const poster of cast.posters) ledger.follows.set(`${reader}/${poster}`, 'followed');
    let round = 0;

    for (const name of selected) {
      const inject = all[name];
      const before = {
        refused: new Map(ledger.refused),
        transport: ledger.transportErrors,
        exits: unexpectedExits.length,
        requests: ledger.requests,
        events: ledger.events.size,
      };
      let healedAt = 0;
      let note = '';
      let injected: () => void = () => undefined;
      const injectAt = new Promise<void>((resolve) => {
        injected = resolve;
      });
      const phaseStart = Date.now();
      const at = () => `${((Date.now() - phaseStart) / 1000).toFixed(1)} s`;
      const faultDone = injectAt
        .then(() => {
          console.log(`[chaos]   injected at ${at()}`);
          return inject(deps);
        })
        .then((n) => {
          note = n;
          healedAt = Date.now();
          console.log(`[chaos]   healed at ${at()}`);
        });
      let completed = 0;
      // A third of the phase's rounds acknowledged (24 ledger events each), or the time they should take.
      const watcher = (async () => {
        const deadline = Date.now() + (P.rounds / 3 / P.rate) * 3000;
        while (ledger.events.size - before.events < (P.rounds / 3) * 24 && Date.now() < deadline) await sleep(50);
        injected();
      })();
      // Recovered end to end: a notification created and an email received since the heal.
      const recovered = faultDone.then(async () => {
        const mailsAtHeal = smtp.mails.length;
        const since = async () =>
          (
            await deps.db.query<{ n: number }>(
              'SELECT count(*)::int AS n FROM notification_items WHERE created_at > to_timestamp($1 / 1000.0)',
              [healedAt],
            )
          ).rows[0].n;
        return eventually(
          'a first effect after the heal',
          async () => (smtp.mails.length > mailsAtHeal && (await since().catch(() => 0)) > 0 ? Date.now() : false),
          P.recoverMs,
          100,
        ).catch(() => NaN);
      });
      console.log(`[chaos] ${name}: ${P.rounds} rounds at ${P.rate}/s`);
      // The load goes on until the first effect after the heal is seen (or that wait times out):
      // a load that ended at the heal would leave nothing to recover with.
      const load = await runLoad({
        apiUrl: api,
        cast,
        runId,
        roundsPerSecond: P.rate,
        rounds: P.rounds,
        until: recovered,
        ledger,
        firstRound: round,
      });
      round += load.started;
      completed = load.completed;
      const loadEnded = Date.now();
      await Promise.all([watcher, faultDone]);
      const firstEffect = await recovered;
      console.log(
        `[chaos]   load ended at ${((loadEnded - phaseStart) / 1000).toFixed(1)} s, first effect after the heal at ${at()}`,
      );
      const drained = await drain(deps, db, P.drainMs).catch((err: unknown) => {
        console.error(`[chaos] ${name}: ${(err as Error).message}`);
        return NaN;
      });
      console.log(`[chaos]   drained at ${at()}`);
      await sleep(500); // the sink's last messages
      const figures = await checkInvariants(db, ledger, smtp.mails, feed, await readDlqs(deps));
      const notReady = (
        await Promise.all(
          [...apps.values()].map(async (a) => {
            // "Returns to 200 by itself": an idle app (the reconciler, whose queue this load leaves
            // empty) may still be in its reconnect backoff (up to 15 s plus jitter, libs/messaging
            // connection.ts) when the queues have drained, so each app gets READY_WITHIN_MS to get there.
            const ready = await eventually(
              `${a.name} ready`,
              async () => (await fetch(`${a.url}/readyz`).catch(() => undefined))?.status === 200,
              READY_WITHIN_MS,
              250,
            ).catch(() => false);
            if (ready) return [];
            const res = await fetch(`${a.url}/readyz`).catch((err: unknown) => err as Error);
            if (!(res instanceof Error) && res.status === 200) return [];
            // What it says, and its log, for whoever reads the failure.
            const said = res instanceof Error ? res.message : `${res.status} ${await res.text().catch(() => '')}`;
            const file = path.join(tmpdir(), `chaos-notready-${a.name}-${Date.now()}.log`);
            await writeFile(file, a.output.join('')).catch(() => undefined);
            console.error(
              `[chaos] ${name}: ${a.name} not ready after the drain: /readyz ${said}; its log in ${file}; tail: ${a.output.join('').slice(-2000)}`,
            );
            return [`${a.name} (${said.slice(0, 300)})`];
          }),
        )
      ).flat();
      if (figures.lost + figures.emailsMissing > 0) {
        // Late or lost? The breach stands either way; a second look 15 s later tells which, for the diagnosis.
        await sleep(15_000);
        const again = await checkInvariants(db, ledger, smtp.mails, feed, await readDlqs(deps)).catch(
          (err: unknown) => err as Error,
        );
        const state = await drainedNow(deps, db);
        console.error(
          `[chaos] ${name}: 15 s after the check: ${again instanceof Error ? again.message : `${again.lost} lost, ${again.emailsMissing} emails missing (${again.examples.join('; ')})`}; drained now: ${state ?? 'yes'}`,
        );
      }
      const { events, examples, ...rest } = figures;
      rows.push({
        fault: name,
        note,
        ...rest,
        rounds: completed,
        requests: ledger.requests - before.requests,
        refused:
          [...ledger.refused]
            .map(([s, n]) => [s, n - (before.refused.get(s) ?? 0)] as const)
            .filter(([, n]) => n > 0)
            .map(([s, n]) => `${n}×${s}`)
            .concat(
              ledger.transportErrors > before.transport
                ? [`${ledger.transportErrors - before.transport}×no answer`]
                : [],
            )
            .join(', ') || 'none',
        firstEffectMs: firstEffect - healedAt,
        drainedMs: drained - healedAt,
        backlogMs: drained - loadEnded,
        exits: unexpectedExits.length - before.exits,
        notReady: notReady.join(', ') || 'none',
        faultBreaches: faultBreaches.splice(0),
        ledgerEvents: ledger.events.size,
      });
      console.log(`[chaos] ${name}: ${JSON.stringify(rows.at(-1))}`);
      if (examples.length > 0) console.log(`[chaos]   missing, e.g.: ${examples.join('; ')}`);
      console.log(`[chaos]   ledger events by type so far: ${EVENT_TYPES.map((t) => `${t} ${events[t]}`).join(', ')}`);
    }
    const totals = ledger.countByType();
    console.log(
      `\n[chaos] ${PROFILE_NAME} profile: ${ledger.requests} requests, ${ledger.events.size} ledger events in ${((Date.now() - t0) / 1000).toFixed(0)} s: ${EVENT_TYPES.map((t) => `${t} ${totals[t]}`).join(', ')}`,
    );
    if (process.env.CHAOS_REPORT)
      await writeFile(
        process.env.CHAOS_REPORT,
        JSON.stringify(
          {
            suite: SUITE,
            ...(SUITE === 'cluster' ? { access: ACCESS, leaders } : {}),
            profile: PROFILE_NAME,
            settings: P,
            totals,
            rows,
            unexpectedExits,
            setupBreaches,
          },
          null,
          2,
        ),
      );
  } finally {
    await cleanup();
    await db?.end().catch(() => undefined);
  }
  printTable(rows);
  for (const e of unexpectedExits) console.error(`[chaos] UNEXPECTED EXIT: ${e}`);
  const failed = rows.filter((r) => breaches(r).length > 0);
  for (const r of failed) console.error(`[chaos] FAILED ${r.fault}: ${breaches(r).join(', ')}`);
  if (SUITE === 'cluster') console.log(`[chaos] quorum queue leaders by node: ${JSON.stringify(leaders)}`);
  for (const b of setupBreaches) console.error(`[chaos] FAILED: ${b}`);
  return failed.length === 0 &&
    unexpectedExits.length === 0 &&
    setupBreaches.length === 0 &&
    rows.length === selected.length
    ? 0
    : 1;
}

type BrokerOfSuite = Deps['rabbit'] & { node: string; cluster?: Cluster; appAmqpUrl?: string; stop(): Promise<void> };

/** The suite's broker: a private node, or (CHAOS_SUITE=cluster) a private 3-node cluster with haproxy in front. */
async function startBroker(): Promise<BrokerOfSuite> {
  if (SUITE === 'chaos') return startPrivateRabbit();
  const cluster = await startCluster();
  return {
    node: `a cluster of ${cluster.nodes.map((n) => n.node).join(', ')} behind haproxy`,
    cluster,
    // The suite reads and acts through haproxy (the management API there, rabbitmqctl on any node).
    amqpUrl: cluster.haproxyAmqpUrl,
    amqpPort: cluster.haproxyAmqpPort,
    managementUrl: cluster.haproxyManagementUrl,
    ctl: (...args) => cluster.ctl(...args),
    // The apps' AMQP_URL: haproxy, as a Kubernetes Service; or every node, with no load balancer.
    // RABBITMQ_MANAGEMENT_URL takes one address, haproxy's, either way (docs/MESSAGING.md "Endpoints").
    appAmqpUrl: ACCESS === 'urls' ? cluster.urlList : cluster.haproxyAmqpUrl,
    stop: () => cluster.stop(),
  };
}

/** Quorum queue leaders by node, per vhost (the cluster suite): `community` after the import, `/` after the apps declared it. */
const leaders: Record<string, Record<string, number>> = {};
/** What the set-up found wrong (a breach, as a fault row's). */
const setupBreaches: string[] = [];

/**
 * The Kubernetes path: the generated definitions (infra/rabbitmq/definitions.json: vhost
 * `community`, its users, topology and policies) imported through ONE node's management API, as
 * the rabbitmq-topology Job does; every queue is declared on that node, and only the leader
 * locator of the policies spreads the leaders (docs/MESSAGING.md "Leader placement").
 */
async function importedLeaders(cluster: Cluster): Promise<Record<string, number>> {
  const definitions = await readFile(path.resolve(__dirname, '../../infra/rabbitmq/definitions.json'), 'utf8');
  const res = await fetch(`${cluster.nodes[0].managementUrl}/api/definitions`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}`,
      'content-type': 'application/json',
    },
    body: definitions,
  });
  if (!res.ok) throw new Error(`importing infra/rabbitmq/definitions.json: ${res.status} ${await res.text()}`);
  const m = { url: cluster.nodes[0].managementUrl, vhost: 'community' };
  // The management API lists a quorum queue's leader once the queue's first statistics are in.
  const byNode = await eventually(
    'every imported quorum queue with a leader',
    async () => {
      const counts = await leadersByNode(m);
      return counts['?'] === undefined && Object.values(counts).reduce((a, b) => a + b, 0) > 0 ? counts : false;
    },
    60_000,
    500,
  );
  return checkSpread('community', byNode);
}

/**
 * Leaders spread over every node: each leads within 30 % of an even share. Not "at most one apart":
 * `balanced` picks the node with the fewest leaders of the whole cluster (every vhost) at the time of
 * each declaration, from counts that lag concurrent declarations, so one vhost's split can come out
 * 20/21/22 (a fresh-clone run did) while all of them on one node is 63/0/0.
 */
function checkSpread(vhost: string, byNode: Record<string, number>): Record<string, number> {
  const counts = cluster3(byNode);
  const even = counts.reduce((a, b) => a + b, 0) / counts.length;
  if (counts.some((n) => Math.abs(n - even) > 0.3 * even))
    setupBreaches.push(`quorum queue leaders of vhost ${vhost} not spread over the nodes: ${JSON.stringify(byNode)}`);
  console.log(`[chaos] quorum queue leaders of vhost ${vhost} by node: ${JSON.stringify(byNode)}`);
  return byNode;
}

/** Leader counts of the three nodes (0 for a node leading nothing). */
function cluster3(byNode: Record<string, number>): number[] {
  const nodes = Object.keys(byNode);
  return [...nodes.map((n) => byNode[n]), ...Array.from({ length: Math.max(0, 3 - nodes.length) }, () => 0)];
}

/** The invariants a row breaks (empty: it passes). */
function breaches(r: Row): string[] {
  const out: string[] = [];
  if (r.lost > 0) out.push(`${r.lost} lost`);
  if (r.duplicated > 0) out.push(`${r.duplicated} duplicated`);
  if (r.dlqUnmatched > 0) out.push(`${r.dlqUnmatched} DLQ messages matching no ledger event`);
  if (r.dlqWithoutReason > 0) out.push(`${r.dlqWithoutReason} DLQ messages without a reason`);
  if (r.emailsMissing > 0) out.push(`${r.emailsMissing} emails missing`);
  if (r.emailsDuplicated > 0) out.push(`${r.emailsDuplicated} emails duplicated`);
  if (r.counterMismatches > 0) out.push(`${r.counterMismatches} counters off`);
  if (r.feedCountersOff > 0) out.push(`${r.feedCountersOff} feed counters off`);
  out.push(...r.faultBreaches);
  if (r.exits > 0) out.push(`${r.exits} unexpected exits`);
  if (r.notReady !== 'none') out.push(`not ready: ${r.notReady}`);
  if (!Number.isFinite(r.firstEffectMs)) out.push('no effect after the heal');
  if (!Number.isFinite(r.drainedMs)) out.push('did not drain');
  return out;
}

function printTable(rows: Row[]): void {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  console.log(
    '\n| Fault | Rounds (requests; failed) | Ledger events, cumulative (effects checked) | Lost | In DLQ (DLQ msgs, unmatched) | Duplicated | Unledgered | Emails missing / dup / crash window | Counters off (unread / feed) | Exits | First effect after heal | Drained after heal | Drained after last request | Note |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.fault} | ${r.rounds} (${r.requests}; ${r.refused}) | ${r.ledgerEvents} (${r.effects}) | ${r.lost} | ${r.inDlq} (${r.dlq}, ${r.dlqUnmatched}) | ${r.duplicated} | ${r.unledgered} | ${r.emailsMissing} / ${r.emailsDuplicated} / ${r.emailsCrashWindow} | ${r.counterMismatches} / ${r.feedCountersOff} | ${r.exits} | ${s(r.firstEffectMs)} | ${s(r.drainedMs)} | ${s(r.backlogMs)} | ${r.note} |`,
    );
  }
}

/** What the suite started, stopped in reverse order at the end, on an error, or on SIGINT/SIGTERM. */
const started: Array<{ stop(): Promise<void> }> = [];
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all(
      [...apps.values()].map((a) => {
        killedOnPurpose.add(a);
        return stopApp(a);
      }),
    );
    for (const s of started.reverse()) await s.stop().catch((err: unknown) => console.error('[chaos] cleanup:', err));
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`[chaos] ${signal}: stopping the apps and the private RabbitMQ, Postgres and Redis`);
    void cleanup().finally(() => process.exit(130));
  });
}

// Whatever ends this process, the apps it started end with it (they would otherwise hold the ports).
process.on('exit', () => {
  for (const a of apps.values()) if (a.proc.exitCode === null && a.proc.signalCode === null) a.proc.kill('SIGKILL');
});

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error('[chaos] failed:', err, ...unexpectedExits);
    process.exitCode = 1;
  },
);
