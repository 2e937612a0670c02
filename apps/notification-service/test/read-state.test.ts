import { randomUUID } from 'node:crypto';
import type { AnyEvent } from '@community/contracts';
import { testLogger } from '@community/testing';
import { createNotificationBatchHandler } from '../src/handlers/notification-batch';
import { BATCH_TIMEOUT_MS } from '../src/queues';
import { batchItems, bearer, countersAndRecount, mention, startHarness, type Harness } from './harness';

/**
 * Unread counters, versioned read state and pagination, through the HTTP API, with notifications
 * written by the consumers' batch handler (called directly: the AMQP path has its own tests).
 */
let h: Harness;
let ingest: (events: AnyEvent[]) => Promise<unknown>;

beforeAll(async () => {
  h = await startHarness('readstate', { amqp: false });
  const handle = createNotificationBatchHandler({
    pool: h.pool,
    emit: h.emit,
    consumer: 'test',
    metrics: h.metrics,
    batchTimeoutMs: BATCH_TIMEOUT_MS,
  });
  const ctx = { logger: testLogger(), signal: new AbortController().signal, queue: 'test', handler: 'test' };
  ingest = (events) => handle(batchItems(events), ctx);
});
afterAll(async () => h.close());

const api = (user: string, as = user) => ({
  list: async (query = '') =>
    h.app.inject({ url: `/v1/users/${user}/notifications${query}`, headers: bearer(h.token(as)) }),
  count: async () =>
    (
      await h.app.inject({ url: `/v1/users/${user}/notifications/unread-count`, headers: bearer(h.token(as)) })
    ).json() as { count: number; version: number },
  post: async (path: string, payload?: object) =>
    h.app.inject({
      method: 'POST',
      url: `/v1/users/${user}/notifications/${path}`,
      headers: bearer(h.token(as)),
      ...(payload ? { payload } : {}),
    }),
});

async function notify(user: string, n: number): Promise<string[]> {
  await ingest(Array.from({ length: n }, () => mention(`c-${randomUUID()}`, 'actor-1', user)));
  const { rows } = await h.pool.query(
    'SELECT id FROM notification_items WHERE user_id = $1 ORDER BY created_version DESC, id DESC',
    [user],
  );
  return rows.map((r) => r.id);
}

/** Deterministic pseudo-random numbers, so a failure can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

it('counters equal a recount after a random, concurrent mix of inserts, read, unread and read-all', async () => {
  const random = rng(20261129);
  const users = Array.from({ length: 4 }, () => `u-${randomUUID()}`);
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
  const known = new Map<string, string[]>(users.map((u) => [u, []]));
  const replay: AnyEvent[] = [];

  for (let wave = 0; wave < 12; wave++) {
    const ops: Array<Promise<unknown>> = [];
    for (let i = 0; i < 16; i++) {
      const user = pick(users);
      const r = random();
      if (r < 0.3) {
        // Some events are redeliveries of earlier ones: they must change nothing.
        const fresh = Array.from({ length: 1 + Math.floor(random() * 5) }, () =>
          mention(`c-${randomUUID()}`, pick(users), user),
        );
        const batch = replay.length && random() < 0.3 ? [...fresh, pick(replay)] : fresh;
        replay.push(...fresh);
        ops.push(ingest(batch));
      } else if (r < 0.85 && (known.get(user) ?? []).length) {
        ops.push(api(user).post(`${pick(known.get(user) ?? [])}/${random() < 0.5 ? 'read' : 'unread'}`));
      } else {
        ops.push(api(user).post('read-all', random() < 0.5 ? { version: Math.floor(random() * 10) } : undefined));
      }
    }
    const results = await Promise.all(ops);
    for (const res of results) {
      if (Array.isArray(res))
        expect(res.filter((o) => o instanceof Error)).toEqual([]); // a batch result
      else expect((res as { statusCode: number }).statusCode).toBe(200);
    }
    for (const u of users)
      known.set(
        u,
        (await h.pool.query('SELECT id FROM notification_items WHERE user_id = $1', [u])).rows.map((row) => row.id),
      );
  }

  const counters = await countersAndRecount(h.pool);
  expect(counters.filter((c) => users.includes(c.user_id))).toHaveLength(users.length);
  for (const c of counters) expect(c).toEqual({ ...c, counter: c.recount });
  for (const u of users) {
    const unread = await api(u).list('?unreadOnly=true&limit=100');
    expect((await api(u).count()).count).toBe(unread.json().items.length);
  }
});

it('read, unread and read-all are idempotent', async () => {
  const user = `u-${randomUUID()}`;
  const [id] = await notify(user, 3);
  const first = await api(user).post(`${id}/read`);
  const again = await api(user).post(`${id}/read`);
  expect(first.statusCode).toBe(200);
  expect(again.json()).toEqual(first.json());
  expect(first.json()).toMatchObject({ count: 2, notification: { id, readAt: expect.any(String) } });

  expect((await api(user).post(`${id}/unread`)).json()).toMatchObject({ count: 3, notification: { readAt: null } });
  expect((await api(user).post(`${id}/unread`)).json()).toMatchObject({ count: 3 });

  expect((await api(user).post('read-all')).json()).toMatchObject({ count: 0, marked: 3 });
  expect((await api(user).post('read-all')).json()).toMatchObject({ count: 0, marked: 0 });
});

it('a late, stale read cannot bring back an old state', async () => {
  const user = `u-${randomUUID()}`;
  const [id] = await notify(user, 1);
  const seenByA = (await api(user).list()).json().items[0].version;
  const read = await api(user).post(`${id}/read`, { version: seenByA }); // device A
  const unread = await api(user).post(`${id}/unread`, { version: read.json().notification.version }); // device B, later
  expect(unread.statusCode).toBe(200);

  const lateRetryOfA = await api(user).post(`${id}/read`, { version: seenByA });
  expect(lateRetryOfA.statusCode).toBe(409);
  expect(lateRetryOfA.json()).toMatchObject({
    code: 'NS_STALE_VERSION',
    message: expect.stringContaining(`changed after version ${seenByA}`),
  });
  expect(await api(user).count()).toMatchObject({ count: 1 });
  expect((await api(user).list()).json().items[0].readAt).toBeNull();
});

it('a read-all marks only what the client had seen: later arrivals and later unreads stay unread', async () => {
  const user = `u-${randomUUID()}`;
  const [n2, n1] = await notify(user, 2);
  await api(user).post(`${n1}/read`);
  const seen = (await api(user).list()).json(); // the client's view: n2 unread, n1 read
  await api(user).post(`${n1}/unread`); // another device, after that view
  const [n3] = await notify(user, 1); // a new notification, after that view

  const res = await api(user).post('read-all', { version: seen.version });
  expect(res.json()).toMatchObject({ marked: 1, count: 2 });
  const unread = (await api(user).list('?unreadOnly=true')).json().items.map((i: { id: string }) => i.id);
  expect(unread.sort()).toEqual([n1, n3].sort());
  expect(unread).not.toContain(n2);
});

it('cursor pages are stable while new notifications arrive, and unreadOnly filters', async () => {
  const user = `u-${randomUUID()}`;
  for (let i = 0; i < 5; i++) await notify(user, 5); // 5 transactions: rows share a version within each
  const all = (
    await h.pool.query('SELECT id FROM notification_items WHERE user_id = $1 ORDER BY created_version DESC, id DESC', [
      user,
    ])
  ).rows.map((r) => r.id);
  expect(all).toHaveLength(25);

  const page1 = (await api(user).list('?limit=10')).json();
  await notify(user, 5); // new ones arrive at the top between pages
  const page2 = (await api(user).list(`?limit=10&cursor=${page1.nextCursor}`)).json();
  const page3 = (await api(user).list(`?limit=10&cursor=${page2.nextCursor}`)).json();
  const seen = [...page1.items, ...page2.items, ...page3.items].map((i: { id: string }) => i.id);
  expect(seen).toEqual(all);
  expect(page3.nextCursor).toBeNull();

  await api(user).post(`${all[0]}/read`);
  await api(user).post(`${all[3]}/read`);
  const unread = (await api(user).list('?unreadOnly=true&limit=100')).json().items.map((i: { id: string }) => i.id);
  expect(unread).toHaveLength(28);
  expect(unread).not.toContain(all[0]);
  expect(unread).not.toContain(all[3]);
});

it('bad requests say what is wrong', async () => {
  const user = `u-${randomUUID()}`;
  const [id] = await notify(user, 1);
  const other = `u-${randomUUID()}`;
  const cases: Array<[Promise<{ statusCode: number; json(): { message: string } }>, number, RegExp]> = [
    [api(user).list('?cursor=bm90LWEtY3Vyc29y'), 400, /cursor is not a cursor issued by this API/],
    [api(user).list('?limit=0'), 400, /limit must be >= 1/],
    [api(user).list('?limit=101'), 400, /limit must be <= 100/],
    [api(user).post('not-a-uuid/read'), 400, /params\/id must match format "uuid"/],
    [api(user).post(`${id}/read`, { version: -1 }), 400, /version must be a non-negative integer/],
    [api(user).post(`${id}/read`, { versoin: 1 }), 400, /unknown field 'versoin'/],
    [api(user).post(`${randomUUID()}/read`), 404, /does not exist in this inbox/],
    [api(other).post(`${id}/read`), 404, /does not exist in this inbox/], // someone else's notification
  ];
  for (const [pending, status, message] of cases) {
    const res = await pending;
    expect([res.statusCode, res.json().message]).toEqual([status, expect.stringMatching(message)]);
  }
});
