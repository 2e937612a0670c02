import { randomUUID } from 'node:crypto';
import type { AnyEvent } from '@community/contracts';
import { eventually } from '@community/testing';
import { createNotificationBatchHandler } from '../src/handlers/notification-batch';
import { batchItems, bearer, event, mention, startHarness, type Harness } from './harness';

/**
 * Quiet hours (docs/NOTIFICATIONS.md "Delivery timing"): a notification created inside the user's
 * quiet hours, in the user's time zone (user.upserted `timezone`, else UTC), carries `quietUntil`
 * on its notification.created: the instant they end, DST-correct. Never on a security alert. The
 * clock is fixed (the batches' injected clock), so nothing depends on the time the tests run at:
 * Saturday 28 March 2026, 22:00 UTC, the evening before Europe/Berlin moves to summer time.
 */
const NOW = new Date('2026-03-28T22:00:00.000Z');
let h: Harness;
beforeAll(async () => {
  h = await startHarness('timing', { clock: () => NOW });
});
afterAll(async () => h.close());

const uid = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

/** Runs events through the consumers' batch handler at NOW, one batch each. */
async function ingest(batches: AnyEvent[][], clock: () => Date = () => NOW): Promise<void> {
  const handle = createNotificationBatchHandler({
    pool: h.pool,
    emit: h.emit,
    consumer: 'timing-test',
    metrics: h.metrics,
    batchTimeoutMs: 10_000,
    clock,
  });
  for (const batch of batches) {
    const results = await handle(batchItems(batch), { signal: new AbortController().signal } as never);
    for (const r of results ?? []) if (r instanceof Error) throw r;
  }
}

/** The data of every notification.created for `userId`, as the senders receive it. */
async function created(userId: string): Promise<Array<{ type: string; quietUntil?: string }>> {
  return h.createdFor(userId);
}

async function setQuietHours(userId: string, quietHours: { start: string; end: string } | null): Promise<void> {
  const res = await h.app.inject({
    method: 'PUT',
    url: `/v1/users/${userId}/preferences`,
    headers: { ...bearer(h.token(userId)), 'content-type': 'application/json' },
    payload: JSON.stringify({ quietHours }),
  });
  expect(res.statusCode).toBe(200);
}

const upserted = (userId: string, timezone?: string, occurredAt = '2026-03-01T00:00:00.000Z') => ({
  ...event('user.upserted', {
    userId,
    email: `${userId}@example.test`,
    displayName: userId,
    ...(timezone ? { timezone } : {}),
  }),
  occurredAt,
});
const alert = (userId: string) =>
  event('security.alert', { alertId: uid('alert'), userId, kind: 'new_login', detail: 'a new login' });

it("in the quiet hours of the user's zone: quietUntil is their end, DST-correct (07:00 CEST = 05:00 UTC)", async () => {
  const user = uid('berlin');
  await setQuietHours(user, { start: '22:00', end: '07:00' });
  await ingest([[upserted(user, 'Europe/Berlin')], [mention(uid('c'), 'x', user)]]);
  expect(await created(user)).toEqual([
    expect.objectContaining({ type: 'mention', quietUntil: '2026-03-29T05:00:00.000Z' }),
  ]);
});

it('the time zone comes with the batch too, and an upsert without one keeps it', async () => {
  const user = uid('jakarta');
  await setQuietHours(user, { start: '22:00', end: '07:00' });
  // 22:00 UTC is 05:00 WIB on the 29th: quiet until 07:00 WIB, 00:00 UTC. The upsert is in the same batch.
  await ingest([[upserted(user, 'Asia/Jakarta'), mention(uid('c'), 'x', user)]]);
  await ingest([[upserted(user, undefined, '2026-03-02T00:00:00.000Z')], [mention(uid('c'), 'x', user)]]);
  const { rows } = await h.pool.query('SELECT timezone FROM notification_users WHERE user_id = $1', [user]);
  expect(rows).toEqual([{ timezone: 'Asia/Jakarta' }]);
  expect((await created(user)).map((d) => d.quietUntil)).toEqual([
    '2026-03-29T00:00:00.000Z',
    '2026-03-29T00:00:00.000Z',
  ]);
});

it('no time zone known: UTC', async () => {
  const user = uid('utc');
  await setQuietHours(user, { start: '21:30', end: '06:15' });
  await ingest([[mention(uid('c'), 'x', user)]]);
  expect((await created(user)).map((d) => d.quietUntil)).toEqual(['2026-03-29T06:15:00.000Z']);
});

it('outside the quiet hours, without any, or a security alert: no quietUntil', async () => {
  const outside = uid('outside');
  const none = uid('none');
  await setQuietHours(outside, { start: '08:00', end: '17:00' }); // 23:00 in Berlin: outside
  await ingest([[upserted(outside, 'Europe/Berlin'), upserted(none, 'Europe/Berlin')]]);
  await ingest([[mention(uid('c'), 'x', outside), mention(uid('c'), 'x', none)]]);
  expect((await created(outside))[0]).not.toHaveProperty('quietUntil');
  expect((await created(none))[0]).not.toHaveProperty('quietUntil');

  const quiet = uid('quiet');
  await setQuietHours(quiet, { start: '22:00', end: '07:00' });
  await ingest([[alert(quiet), mention(uid('c'), 'x', quiet)]]);
  const events = await created(quiet);
  expect(events.find((d) => d.type === 'security_alert')).not.toHaveProperty('quietUntil');
  expect(events.find((d) => d.type === 'mention')?.quietUntil).toBe('2026-03-29T07:00:00.000Z');
});

it('removing the quiet hours stops the holds; the clock decides, not the time the test runs', async () => {
  const user = uid('later');
  await setQuietHours(user, { start: '22:00', end: '07:00' });
  await ingest([[mention(uid('c'), 'x', user)]], () => new Date('2026-03-29T07:00:00.000Z')); // at the end: outside
  await setQuietHours(user, null);
  await ingest([[mention(uid('c'), 'x', user)]]);
  expect((await created(user)).map((d) => d.quietUntil ?? null)).toEqual([null, null]);
});

it('through the broker: the service stamps what it consumes with its own clock', async () => {
  const user = uid('broker');
  await setQuietHours(user, { start: '22:00', end: '07:00' });
  await h.publish(upserted(user, 'Europe/Berlin'));
  await eventually('the user projected', async () => {
    const { rows } = await h.pool.query('SELECT 1 FROM notification_users WHERE user_id = $1', [user]);
    return rows.length === 1;
  });
  await h.publish(mention(uid('c'), 'x', user));
  const [data] = await eventually('notification.created written', async () => {
    const events = await created(user);
    return events.length === 1 ? events : undefined;
  });
  expect(data.quietUntil).toBe('2026-03-29T05:00:00.000Z');
});
