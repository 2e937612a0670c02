import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { eventually, tcpProxy } from '@community/testing';
import { freePort, http, jwt, startSmtpSink } from '../harness';
import { checkInvariants, type FeedReaders } from './checks';
import { drain, drainedNow, readDlqs, READY_WITHIN_MS } from './drain';
import { faults } from './faults';
import { APPS, Fleet, type Deps } from './fleet';
import { cast as makeCast, EVENT_TYPES, Ledger, runLoad } from './load';
import { createMigratedDatabase, startPrivatePostgres, startPrivateRabbit, startPrivateRedis } from './private-deps';
import { ACCESS, base, JWT_SECRET, P, PROFILE_NAME, SUITE } from './profile';
import { breaches, printTable, type Row } from './report';
import { startCluster, type Cluster } from '../cluster/cluster';
import { leadersByNode } from '../cluster/faults';

/**
 * The fault suite (`npm run test:chaos`; short profile in `npm test` via e2e/chaos.isolated.test.ts).
 *
 * The pieces: profile.ts (settings), fleet.ts (the apps under test and what the run started),
 * faults.ts (each fault: inject, hold, heal), drain.ts (when the system is drained), checks.ts (the
 * invariants), report.ts (rows, breaches, the table); this file runs the phases.
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

/** The apps and everything else this run starts; stopped at the end, on an error, or on SIGINT/SIGTERM. */
const fleet = new Fleet();

async function main(): Promise<number> {
  const all = faults(fleet);
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
      if (fleet.cleaningUp) void s.stop();
      else fleet.started.push(s);
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
    fleet.started.push({ stop: () => amqpProxy.close() }, { stop: () => pgProxy.close() });
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

    for (const spec of APPS) fleet.ports[spec.key] = await freePort();
    const appDbUrl = new URL(dbUrl);
    appDbUrl.port = String(pgProxy.port);
    fleet.appEnv = {
      ...P.appEnv,
      RABBITMQ_MANAGEMENT_URL: rabbit.managementUrl,
      DATABASE_URL: appDbUrl.toString(),
      REDIS_URL: redis.url,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      SMTP_RATE_PER_SECOND: '0',
      JWT_SECRET,
      NOTIFICATION_SERVICE_URL: `http://127.0.0.1:${fleet.ports.notifications}`,
      UNSUBSCRIBE_BASE_URL: `http://127.0.0.1:${fleet.ports.email}`,
      DEMO_TRAFFIC_RATE: '0',
      // Thousands of writes from one address and a few users: the demo API's write rate limit would answer 429.
      DEMO_WRITE_RATE_LIMIT: '1000000',
    };
    // notification-service first: it declares the topology the others publish into; the rest together.
    await fleet.launch(APPS[0], deps);
    await Promise.all(APPS.slice(1).map((spec) => fleet.launch(spec, deps)));
    const api = () => fleet.app('api').url;

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
            `${fleet.app('feed').url}/v1/users/${userId}/feed?limit=100${qs}`,
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
        exits: fleet.unexpectedExits.length,
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
          [...fleet.apps.values()].map(async (a) => {
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
        exits: fleet.unexpectedExits.length - before.exits,
        notReady: notReady.join(', ') || 'none',
        faultBreaches: fleet.faultBreaches.splice(0),
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
            unexpectedExits: fleet.unexpectedExits,
            setupBreaches,
          },
          null,
          2,
        ),
      );
  } finally {
    await fleet.cleanup();
    await db?.end().catch(() => undefined);
  }
  printTable(rows);
  for (const e of fleet.unexpectedExits) console.error(`[chaos] UNEXPECTED EXIT: ${e}`);
  const failed = rows.filter((r) => breaches(r).length > 0);
  for (const r of failed) console.error(`[chaos] FAILED ${r.fault}: ${breaches(r).join(', ')}`);
  if (SUITE === 'cluster') console.log(`[chaos] quorum queue leaders by node: ${JSON.stringify(leaders)}`);
  for (const b of setupBreaches) console.error(`[chaos] FAILED: ${b}`);
  return failed.length === 0 &&
    fleet.unexpectedExits.length === 0 &&
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

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`[chaos] ${signal}: stopping the apps and the private RabbitMQ, Postgres and Redis`);
    void fleet.cleanup().finally(() => process.exit(130));
  });
}

// Whatever ends this process, the apps it started end with it (they would otherwise hold the ports).
process.on('exit', () => {
  for (const a of fleet.apps.values())
    if (a.proc.exitCode === null && a.proc.signalCode === null) a.proc.kill('SIGKILL');
});

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error('[chaos] failed:', err, ...fleet.unexpectedExits);
    process.exitCode = 1;
  },
);
