import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import type { Topology } from '@community/messaging';
import {
  databaseFaults,
  createTestDatabase,
  createTestVhost,
  eventually,
  type TestDatabase,
  type TestVhost,
  type DatabaseFaults,
} from '@community/testing';
import type { DemoService } from '../src/service';
import { testService } from './helpers';

/**
 * No exit because the database failed, under load. HTTP writes (user upserts, retried by the
 * client until answered 2xx, as a real client would; the upsert is idempotent) flow in while the
 * test terminates every backend of the API's database again and again (requests' transactions, the
 * relay, its LISTEN connection, idle pool clients) and refuses connections for a while (until
 * readiness has said so and writes were refused in it). The
 * service runs in this process: an unheard 'error' on a pg client or an unhandled rejection would
 * fail the test. Then: /readyz said `database: false` during the outage and 200 after it, on its
 * own, and every user exists once with exactly one user.upserted, relayed to the broker.
 */
const TAP = 'test.tap';
const topology: Topology = {
  ...COMMUNITY_TOPOLOGY,
  queues: [
    ...COMMUNITY_TOPOLOGY.queues,
    { name: TAP, bindings: [{ exchange: 'community.events', routingKeys: ['user.upserted'] }], retryDelaysMs: [] },
  ],
};

let vhost: TestVhost;
let db: TestDatabase;
let service: DemoService;
let pool: Pool;
let app: FastifyInstance;
let faults: DatabaseFaults;

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('demo-outage'), createTestDatabase('demo_api_outage')]);
  service = testService(db, { vhost, topology });
  ({ pool, app } = service);
  await app.listen({ port: 0, host: '127.0.0.1' });
  await service.start();
  faults = await databaseFaults(db.url);
});

afterAll(async () => {
  await faults.close();
  await service.stop();
  await app.close();
  await Promise.all([vhost.delete(), db.drop()]);
});

it('survives terminated backends and refused connections under write load; readiness follows; every write counted once', async () => {
  const unhandled: unknown[] = [];
  const onRejection = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onRejection);

  const written: string[] = [];
  let refused = 0;
  let writing = true;
  // How many termination rounds had returned when the last acknowledged write's attempt began. A
  // write whose attempt began after a round ran on a connection opened after that round; one that
  // began before may have committed just ahead of the round and been answered after it.
  let roundsDone = 0;
  let ackedAfterRound = -1;
  /** One client: writes user after user, retrying each until it is answered 2xx. */
  const client = async (n: number) => {
    for (let i = 0; writing; i++) {
      const id = `w${n}-${i}`;
      for (;;) {
        const startedAfter = roundsDone;
        const res = await app.inject({
          method: 'POST',
          url: '/v1/users',
          payload: { id, email: `${id}@example.test`, displayName: `Writer ${n}` },
        });
        if (res.statusCode < 300) {
          ackedAfterRound = Math.max(ackedAfterRound, startedAfter);
          break;
        }
        expect(res.statusCode).toBeGreaterThanOrEqual(500); // a fault, never a 4xx for valid input
        refused++;
        await sleep(50); // the client's retry pacing, not a wait for anything
      }
      written.push(id);
    }
  };
  const clients = Promise.all(Array.from({ length: 8 }, (_, n) => client(n)));

  // Each probe records the outage phase at its start and at its answer: only a probe that started
  // after block() returned (every backend ended, new connections refused) and was answered before
  // unblock() began ran entirely inside the outage. Ordering, not milliseconds.
  let phase = 'before' as 'before' | 'blocked' | 'after'; // (a cast: assigned from the test body, read in the probe loop)
  const readiness: Array<{ inOutage: boolean; status: number; database: unknown }> = [];
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const startedIn = phase;
      const res = await app.inject({ url: '/readyz' });
      readiness.push({
        inOutage: startedIn === 'blocked' && phase === 'blocked',
        status: res.statusCode,
        database: res.json().checks?.database,
      });
      await sleep(100); // pacing
    }
  })();

  // A round of terminations hits a service at work: it has acknowledged a write whose attempt began
  // after the last round (so it reconnected on its own), and the round finds connections to end.
  const rounds: number[] = [];
  const terminateWhileWorking = async () => {
    const after = roundsDone;
    await eventually(
      'the API acknowledges writes again before the next fault',
      () => ackedAfterRound >= after,
      60_000,
      50,
    );
    rounds.push(await faults.terminateAll());
    roundsDone++;
  };
  for (let i = 0; i < 4; i++) await terminateWhileWorking();
  await faults.block();
  roundsDone++; // block() ended every connection too
  phase = 'blocked';
  // The outage lasts until readiness has said so several times and writes have been refused in it,
  // not for a fixed time.
  const refusedAtBlock = refused;
  await eventually(
    'the outage seen by readiness and by writers',
    () => readiness.filter((r) => r.inOutage).length >= 3 && refused >= refusedAtBlock + 8,
    60_000,
    50,
  );
  phase = 'after';
  await faults.unblock();
  for (let i = 0; i < 3; i++) await terminateWhileWorking();
  const last = written.length;
  await eventually('the API acknowledges writes after the last fault', () => written.length > last, 60_000, 50);
  writing = false;
  await clients;

  await eventually(
    '/readyz 200 again on its own',
    async () => (await app.inject({ url: '/readyz' })).statusCode === 200,
    20_000,
    100,
  );
  probing = false;
  await probe;
  process.off('unhandledRejection', onRejection);

  expect(rounds.every((n) => n > 0)).toBe(true); // every round found connections to end
  expect(refused).toBeGreaterThan(0); // the faults did hit requests
  const during = readiness.filter((r) => r.inOutage);
  expect(during.length).toBeGreaterThanOrEqual(3);
  expect(during.every((r) => r.status === 503 && r.database === false)).toBe(true);
  expect(unhandled).toEqual([]);

  // Every acknowledged write exactly once, with exactly one event, and every event relayed.
  const users = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM community_users WHERE id LIKE 'w%'");
  expect(users.rows[0].n).toBe(written.length);
  const events = await pool.query<{ n: number; ids: number }>(
    "SELECT count(*)::int AS n, count(DISTINCT payload->'data'->>'userId')::int AS ids FROM outbox_messages WHERE event_type = 'user.upserted' AND payload->'data'->>'userId' LIKE 'w%'",
  );
  expect(events.rows[0]).toEqual({ n: written.length, ids: written.length });
  const seen = new Set<string>();
  await eventually(
    `${written.length} user.upserted relayed`,
    async () => {
      for (const m of await vhost.take(TAP, 1000)) seen.add(JSON.parse(m.body).data.userId);
      return seen.size >= written.length;
    },
    30_000,
    100,
  );
  expect(seen.size).toBe(written.length);
}, 120_000);
