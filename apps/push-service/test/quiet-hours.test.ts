import { notificationCreated, startHarness, withdrawn, type Harness } from './support/harness';
import { TestPushServer } from './support/push-server';

// Quiet hours (docs/PUSH.md "Quiet hours and delay-then-check"): a notification.created with
// quietUntil in the future waits in the ledger until then and the poller pushes it when it is due.
// The service's clock is the test's: it moves the clock and polls by hand, never waits for time.
let h: Harness;
let push: TestPushServer;
let now = new Date();
const HOUR = 3_600_000;
const later = (ms: number) => new Date(now.getTime() + ms);

beforeAll(async () => {
  push = await new TestPushServer().start();
  h = await startHarness('quiet', {}, { clock: () => now, runPoller: false });
}, 60_000);

afterAll(async () => {
  await h?.close();
  await push?.close();
});

const row = async (key: string) =>
  (
    await h.svc.pool.query<{
      state: string;
      attempts: number;
      next_attempt_at: Date;
      expires_at: Date;
      last_error: string | null;
    }>(
      `SELECT state::text, attempts, next_attempt_at, expires_at, last_error FROM push_deliveries WHERE idempotency_key = $1`,
      [key],
    )
  ).rows[0];

it('holds a push until quietUntil, then the poller sends it', async () => {
  const sub = await h.subscribe(push, 'qia');
  const quietUntil = later(8 * HOUR);
  const event = notificationCreated({ userId: 'qia', type: 'mention', quietUntil: quietUntil.toISOString() });
  await h.publishAndWait(event);

  // Waiting in the ledger, due at quietUntil, its TTL counted from then; nothing pushed.
  expect(await row(event.data.idempotencyKey)).toEqual({
    state: 'pending',
    attempts: 0,
    next_attempt_at: quietUntil,
    expires_at: new Date(quietUntil.getTime() + 86_400_000),
    last_error: null,
  });
  expect(await h.metric('push_decisions_total', { type: 'mention', outcome: 'held' })).toBe(1);
  expect(await h.svc.poller.poll()).toBe(0);

  now = new Date(quietUntil.getTime() - 1000);
  expect(await h.svc.poller.poll()).toBe(0);
  expect(push.for(sub)).toHaveLength(0);

  now = quietUntil;
  expect(await h.svc.poller.poll()).toBe(1);
  expect(push.for(sub)).toHaveLength(1);
  expect(JSON.parse(push.for(sub)[0].plaintext)).toMatchObject({ notificationId: event.data.notificationId });
  expect(await row(event.data.idempotencyKey)).toMatchObject({ state: 'sent', attempts: 1 });
});

it('pushes at once what is not held: a passed quietUntil, and a security alert whatever it says', async () => {
  const sub = await h.subscribe(push, 'qib');
  const passed = notificationCreated({ userId: 'qib', type: 'reply', quietUntil: later(-HOUR).toISOString() });
  const alert = notificationCreated({
    userId: 'qib',
    type: 'security_alert',
    quietUntil: later(8 * HOUR).toISOString(),
  });
  await h.publishAndWait(passed, alert);
  expect((await row(passed.data.idempotencyKey))?.state).toBe('sent');
  expect((await row(alert.data.idempotencyKey))?.state).toBe('sent');
  expect(push.for(sub)).toHaveLength(2);
});

it('a held push withdrawn during the quiet hours is never sent', async () => {
  const sub = await h.subscribe(push, 'qic');
  const quietUntil = later(6 * HOUR);
  const event = notificationCreated({ userId: 'qic', type: 'mention', quietUntil: quietUntil.toISOString() });
  await h.publishAndWait(event);
  await h.publishAndWait(withdrawn(event));
  now = later(7 * HOUR);
  expect(await h.svc.poller.poll()).toBe(0);
  expect(await row(event.data.idempotencyKey)).toMatchObject({
    state: 'cancelled',
    attempts: 0,
    last_error: 'withdrawn',
  });
  expect(push.for(sub)).toHaveLength(0);
});

it('holds at most a day, whatever quietUntil says', async () => {
  const sub = await h.subscribe(push, 'qid');
  const event = notificationCreated({ userId: 'qid', type: 'mention', quietUntil: later(5 * 24 * HOUR).toISOString() });
  await h.publishAndWait(event);
  expect((await row(event.data.idempotencyKey))?.next_attempt_at).toEqual(later(24 * HOUR));
  now = later(24 * HOUR);
  expect(await h.svc.poller.poll()).toBe(1);
  expect(push.for(sub)).toHaveLength(1);
});
