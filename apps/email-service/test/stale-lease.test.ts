import { Client } from 'pg';
import { eventually } from '@community/testing';
import { flushDueWindows, sendDueDigests } from '../src/digest/digest-jobs';
import { digestKey, windowFor } from '../src/domain/digest-window';
import { messageIdFor } from '../src/message-id';
import * as ledger from '../src/store/ledger';
import {
  createInfra,
  notificationCreated,
  startService,
  testConfig,
  userUpserted,
  type Infra,
  type StartedService,
} from './support/harness';
import { TestSmtp } from './support/smtp';

// The takeover of a stale lease (store/ledger.ts): a delivery left in 'sending' by a worker that
// died is taken over by exactly one of several concurrent takers once its lease has expired, and
// not before. The dead worker is a row whose lease_until is set in the past (or, for a live one, in
// the future): no test here waits for a lease to run out. Two replicas, real Postgres and SMTP.
const TAKERS_PER_REPLICA = 2;
const today = windowFor(new Date(), 'daily');
const noon = new Date(today.start.getTime() + 12 * 3_600_000);
const tomorrow = new Date(today.end.getTime() + 60_000);
let infra: Infra;
let smtp: TestSmtp;
let a: StartedService;
let b: StartedService;
let db: Client;

const emailsTo = (userId: string) => smtp.received.filter((m) => m.rcptTo.includes(`${userId}@example.test`));
const row = async (where: string, params: unknown[]) =>
  (
    await db.query(
      `SELECT id::text AS id, state, attempts, lease_token::text AS token FROM email_deliveries WHERE ${where}`,
      params,
    )
  ).rows as Array<{ id: string; state: string; attempts: number; token: string | null }>;
/** Leaves the row as a worker that claimed it and died does: 'sending', one attempt, a lease ending `offset` from the database's now. */
const abandon = (where: string, params: unknown[], offset: '-1 minute' | '1 hour') =>
  db.query(
    `UPDATE email_deliveries SET state = 'sending', attempts = 1, lease_token = gen_random_uuid(), lease_until = now() + interval '${offset}' WHERE ${where}`,
    params,
  );

beforeAll(async () => {
  infra = await createInfra('email_stale_lease');
  smtp = await new TestSmtp().start();
  const config = testConfig(infra, smtp);
  a = await startService(config, { clock: () => noon });
  b = await startService(config, { clock: () => noon });
  db = new Client({ connectionString: infra.db.url });
  await db.connect();
  for (const user of ['dead', 'live', 'imm']) await a.publish(userUpserted(user, `${user}@example.test`, user));
  await eventually('users projected', async () => (await db.query('SELECT 1 FROM email_users')).rowCount === 3);
});

afterAll(async () => {
  await db?.end();
  await a?.svc.stop();
  await b?.svc.stop();
  await Promise.all([a?.svc.app.close(), b?.svc.app.close()]);
  await smtp?.close();
  await infra?.close();
});

it('digests: an expired lease is taken over by exactly one of several concurrent takers, a live one by none', async () => {
  for (const user of ['dead', 'live'])
    await a.publish(notificationCreated({ userId: user, type: 'follow', actorId: 'imm', emailChannel: 'digest' }));
  await eventually('items collected', async () => (await db.query('SELECT 1 FROM email_digest_items')).rowCount === 2);
  expect(await flushDueWindows(a.svc.digestJobs, tomorrow)).toEqual({ flushed: 2, empty: 0 });
  const key = (user: string) => digestKey(user, today.start);
  await abandon('idempotency_key = $1', [key('dead')], '-1 minute');
  await abandon('idempotency_key = $1', [key('live')], '1 hour');
  const [dead] = await row('idempotency_key = $1', [key('dead')]);
  const [live] = await row('idempotency_key = $1', [key('live')]);

  // Concurrent schedulers' send steps, on both replicas (each call its own pool connection).
  const takers = () =>
    [a, b].flatMap((r) => Array.from({ length: TAKERS_PER_REPLICA }, () => sendDueDigests(r.svc.digestJobs, tomorrow)));
  const count = 2 * TAKERS_PER_REPLICA;

  // The worst interleaving, made certain: another taker holds the expired row (its claim not yet
  // committed) while these run. They skip it rather than wait; without the claim's row lock they
  // would all wait on it and then each take it over (one email per taker).
  const holder = new Client({ connectionString: infra.db.url });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM email_deliveries WHERE id = $1 FOR UPDATE', [dead.id]);
    let settled = 0;
    const running = takers().map((p) => p.finally(() => (settled += 1)));
    // Waiting on the holder or on another waiter (row lock waiters queue behind each other).
    const waitingOnALock = async () =>
      (
        await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0',
        )
      ).rows[0].n;
    await eventually(
      'every taker done with the locked row or waiting on it',
      async () => settled + (await waitingOnALock()) === count,
    );
    await holder.query('COMMIT');
    expect(await Promise.all(running)).toEqual(Array(count).fill(0));
  } finally {
    await holder.end();
  }
  expect(emailsTo('dead')).toHaveLength(0);

  // Free for all: exactly one of the takers wins the expired lease and sends; the live lease stays
  // with its owner (nobody sends it, nobody touches the row).
  const sent = await Promise.all(takers());
  expect(sent.reduce((x, y) => x + y, 0)).toBe(1);
  expect(emailsTo('dead')).toHaveLength(1);
  expect(emailsTo('dead')[0].messageId).toBe(messageIdFor('digest', key('dead'), 'community.local'));
  expect(await row('id = $1', [dead.id])).toEqual([{ id: dead.id, state: 'sent', attempts: 2, token: null }]);
  expect(emailsTo('live')).toHaveLength(0);
  expect(await row('id = $1', [live.id])).toEqual([live]);

  // Taken over once: later takers find nothing to take.
  expect(await Promise.all(takers())).toEqual(Array(count).fill(0));
  expect(emailsTo('dead')).toHaveLength(1);
});

it('immediate email: redeliveries racing for an expired lease send it once; a live lease is not claimed', async () => {
  const event = notificationCreated({ userId: 'imm', actorId: 'dead', excerpt: 'hi' });
  const key = event.data.idempotencyKey;
  const delivery: ledger.NewDelivery = {
    idempotencyKey: key,
    channel: 'immediate',
    userId: 'imm',
    messageId: messageIdFor('immediate', key, 'community.local'),
    notificationType: 'mention',
    notificationId: event.data.notificationId,
  };

  // A live lease: concurrent claims all find it taken, with the time it has left.
  const liveDelivery = {
    ...delivery,
    idempotencyKey: `${key}:live`,
    messageId: messageIdFor('immediate', `${key}:live`, 'community.local'),
  };
  expect(await ledger.claim(a.svc.pool, liveDelivery, 5_000)).toMatchObject({ claimed: true });
  await abandon('idempotency_key = $1', [liveDelivery.idempotencyKey], '1 hour');
  const [liveBefore] = await row('idempotency_key = $1', [liveDelivery.idempotencyKey]);
  const claims = await Promise.all([a, b, a, b].map((r) => ledger.claim(r.svc.pool, liveDelivery, 5_000)));
  for (const c of claims) expect(c).toMatchObject({ claimed: false, state: 'sending' });
  for (const c of claims) expect(c.claimed === false && c.msUntilLeaseExpiry).toBeGreaterThan(0);
  expect(await row('idempotency_key = $1', [liveDelivery.idempotencyKey])).toEqual([liveBefore]);

  // The worker that claimed this one died before its send: the lease ran out. Four copies of the
  // message (the broker's redelivery, a duplicate publish) reach both replicas at once.
  expect(await ledger.claim(a.svc.pool, delivery, 5_000)).toMatchObject({ claimed: true });
  await abandon('idempotency_key = $1', [key], '-1 minute');
  const duplicatesBefore =
    (await a.metric('messaging_succeeded_total', { queue: 'email-service.send', outcome: 'duplicate' })) +
    (await b.metric('messaging_succeeded_total', { queue: 'email-service.send', outcome: 'duplicate' }));
  await Promise.all([a.publish(event), a.publish(event), a.publish(event), a.publish(event)]);
  // One copy takes the row over and sends; the other three wait on its lease and are acked as
  // duplicates once it is sent: after that no copy is left running.
  await eventually(
    'three copies acked as duplicates',
    async () =>
      (await a.metric('messaging_succeeded_total', { queue: 'email-service.send', outcome: 'duplicate' })) +
        (await b.metric('messaging_succeeded_total', { queue: 'email-service.send', outcome: 'duplicate' })) >=
      duplicatesBefore + 3,
    30_000,
  );
  expect(emailsTo('imm')).toHaveLength(1);
  expect(emailsTo('imm')[0].messageId).toBe(delivery.messageId);
  expect(await row('idempotency_key = $1', [key])).toMatchObject([{ state: 'sent', attempts: 2, token: null }]);
});
