import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import type { Topology } from '@community/messaging';
import { databaseFaults, createTestDatabase, createTestVhost, eventually, type TestDatabase, type TestVhost, type DatabaseFaults } from '@community/testing';
import type { DemoService } from '../src/service';
import { testService } from './helpers';

/**
 * No exit because the database failed, under load. HTTP writes (user upserts, retried by the
 * client until answered 2xx, as a real client would; the upsert is idempotent) flow in while the
 * test terminates every backend of the API's database again and again (requests' transactions, the
 * relay, its LISTEN connection, idle pool clients) and refuses connections for three seconds. The
 * service runs in this process: an unheard 'error' on a pg client or an unhandled rejection would
 * fail the test. Then: /readyz said `database: false` during the outage and 200 after it, on its
 * own, and every user exists once with exactly one user.upserted, relayed to the broker.
 */
const TAP = 'test.tap';
const topology: Topology = {
  ...COMMUNITY_TOPOLOGY,
  queues: [...COMMUNITY_TOPOLOGY.queues, { name: TAP, bindings: [{ exchange: 'community.events', routingKeys: ['user.upserted'] }], retryDelaysMs: [] }],
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
  /** One client: writes user after user, retrying each until it is answered 2xx. */
  const client = async (n: number) => {
    for (let i = 0; writing; i++) {
      const id = `w${n}-${i}`;
      for (;;) {
        const res = await app.inject({ method: 'POST', url: '/v1/users', payload: { id, email: `${id}@example.test`, displayName: `Writer ${n}` } });
        if (res.statusCode < 300) break;
        expect(res.statusCode).toBeGreaterThanOrEqual(500); // a fault, never a 4xx for valid input
        refused++;
        await sleep(50);
      }
      written.push(id);
    }
  };
  const clients = Promise.all(Array.from({ length: 8 }, (_, n) => client(n)));

  const readiness: Array<{ at: number; status: number; database: unknown }> = [];
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const res = await app.inject({ url: '/readyz' });
      readiness.push({ at: Date.now(), status: res.statusCode, database: res.json().checks?.database });
      await sleep(100);
    }
  })();

  let terminated = 0;
  await sleep(1000);
  for (let i = 0; i < 4; i++) {
    terminated += await faults.terminateAll();
    await sleep(700);
  }
  await faults.block();
  const blockedAt = Date.now();
  await sleep(3000);
  const unblockedAt = Date.now();
  await faults.unblock();
  for (let i = 0; i < 3; i++) {
    await sleep(700);
    terminated += await faults.terminateAll();
  }
  await sleep(1000);
  writing = false;
  await clients;

  await eventually('/readyz 200 again on its own', async () => (await app.inject({ url: '/readyz' })).statusCode === 200, 20_000, 100);
  probing = false;
  await probe;
  process.off('unhandledRejection', onRejection);

  expect(terminated).toBeGreaterThan(7);
  expect(refused).toBeGreaterThan(0); // the faults did hit requests
  const during = readiness.filter((r) => r.at > blockedAt + 500 && r.at < unblockedAt);
  expect(during.length).toBeGreaterThan(0);
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
