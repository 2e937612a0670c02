import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import { databaseFaults, eventually, type DatabaseFaults } from '@community/testing';
import { CRITICAL_QUEUE } from '../src/queues';
import { countersAndRecount, mention, startHarness, type Harness } from './harness';

/**
 * No exit because the database failed, under load. Mentions flow in continuously while the test
 * terminates every backend of the service's database again and again (consumers' transactions,
 * the relay, both LISTEN connections, the pool's idle clients, mid-batch included) and refuses
 * connections for three seconds. The service builder runs in this process: an unheard 'error' on a
 * pg client or an unhandled rejection would fail the test (jest turns both into failures). Then:
 * /readyz said `database: false` during the outage and 200 after it, on its own, and every mention
 * is counted exactly once.
 */
const USERS = 16;
let h: Harness;
let faults: DatabaseFaults;

beforeAll(async () => {
  // Short retry tiers: a batch failed by a fault comes back in a fraction of a second.
  const topology = { ...COMMUNITY_TOPOLOGY, queues: COMMUNITY_TOPOLOGY.queues.map((q) => ({ ...q, retryDelaysMs: [250, 1000, 2000, 4000, 8000] })) };
  h = await startHarness('dboutage', { topology });
  faults = await databaseFaults(h.db.url);
});
afterAll(async () => {
  await faults.close();
  await h.close();
});

it('survives terminated backends and refused connections under load; readiness follows; every mention counted once', async () => {
  const unhandled: unknown[] = [];
  const onRejection = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onRejection);

  let published = 0;
  let publishing = true;
  const users = Array.from({ length: USERS }, (_, i) => `u-${i}-${randomUUID()}`);
  const traffic = (async () => {
    while (publishing) {
      // about 150 mentions/s, in bursts the consumers batch
      await Promise.all(Array.from({ length: 15 }, () => h.publish(mention(`c-${randomUUID()}`, 'actor-1', users[published++ % USERS]))));
      await sleep(100);
    }
  })();

  const readiness: Array<{ at: number; status: number; database: unknown }> = [];
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const res = await h.app.inject({ url: '/readyz' });
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
  publishing = false;
  await traffic;

  await eventually('/readyz 200 again on its own', async () => (await h.app.inject({ url: '/readyz' })).statusCode === 200, 20_000, 100);
  probing = false;
  await probe;
  process.off('unhandledRejection', onRejection);

  expect(terminated).toBeGreaterThan(7); // every round found connections to end
  const during = readiness.filter((r) => r.at > blockedAt + 500 && r.at < unblockedAt);
  expect(during.length).toBeGreaterThan(0);
  expect(during.every((r) => r.status === 503 && r.database === false)).toBe(true);
  expect(unhandled).toEqual([]);

  // Every mention exactly once: rows, distinct keys, counters (and none dead-lettered).
  await eventually(
    `${published} mentions stored`,
    async () => Number((await h.pool.query('SELECT count(*) FROM notification_items WHERE user_id = ANY($1)', [users])).rows[0].count) >= published,
    60_000,
    250,
  );
  const { rows } = await h.pool.query('SELECT count(*)::int AS n, count(DISTINCT idempotency_key)::int AS keys FROM notification_items WHERE user_id = ANY($1)', [users]);
  expect(rows[0]).toEqual({ n: published, keys: published });
  const counters = (await countersAndRecount(h.pool)).filter((c) => users.includes(c.user_id));
  expect(counters.reduce((sum, c) => sum + c.counter, 0)).toBe(published);
  for (const c of counters) expect(c.counter).toBe(c.recount);
  expect((await h.vhost?.depth(`${CRITICAL_QUEUE}.dlq`))?.total).toBe(0);
}, 120_000);
