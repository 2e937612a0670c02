// Every lost-work kind from its rows: the reconciler alone on a database and a vhost of its own
// (no consumer runs, so whatever the re-drive publishes stays in the queues to be read). Rows are
// written as their owners write them (a notification row is the record of its notification.created:
// no outbox row); their messages never reached a queue, as after a purge.
import { randomUUID } from 'node:crypto';
import { buildEvent, validate, type AnyEvent } from '@community/contracts';
import { createTestDatabase, createTestVhost, type TestDatabase, type TestVhost } from '@community/testing';
import { bearer, startReconciler, type Reconciler } from './harness';

let db: TestDatabase;
let vhost: TestVhost;
let rc: Reconciler;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const q = <R extends Record<string, any> = any>(sql: string, params?: unknown[]) => rc.svc.pool.query<R>(sql, params);

beforeAll(async () => {
  [db, vhost] = await Promise.all([createTestDatabase('rc_lost_work'), createTestVhost('rc-lost-work')]);
  rc = await startReconciler(db, vhost, {
    dlqConsole: false,
    env: { LOST_WORK_GRACE_MS: '1000', STUCK_FANOUT_AFTER_MS: '1000', STUCK_LEASE_GRACE_MS: '1000' },
  });
});

afterAll(async () => {
  await rc?.close();
  await Promise.all([db?.drop(), vhost?.delete()]);
});

/** An outbox row its relay published an hour ago (sent_at set): the message left the producer. */
async function published(producer: string, event: AnyEvent, aggregateId: string): Promise<void> {
  await q(
    `INSERT INTO outbox_messages (producer, aggregate_id, event_id, event_type, routing_key, payload, created_at, sent_at)
     VALUES ($1, $2, $3, $4, $4, $5, now() - interval '1 hour', now() - interval '1 hour')`,
    [producer, aggregateId, event.id, event.type, JSON.stringify(event)],
  );
}

interface Notified {
  /** The row's id: its notification.created's event id. */
  id: string;
  userId: string;
  key: string;
  createdAt: Date;
}

/**
 * A notification row as notification-service writes it, an hour ago: the record of its
 * notification.created, which it emitted right after the commit (no outbox row; the message never
 * reached a queue here).
 */
async function notified(
  userId: string,
  key: string,
  type: 'mention' | 'comment' | 'security_alert',
  emailChannel: 'immediate' | 'digest' | 'off',
  o: { withdrawn?: boolean } = {},
): Promise<Notified> {
  const { rows } = await q<{ id: string; created_at: Date }>(
    `INSERT INTO notification_items (user_id, type, idempotency_key, slot_key, resource_type, resource_id, excerpt, email_channel,
                                     source_event_id, created_version, state_version, push, correlation_id, created_at, withdrawn_at)
     VALUES ($1, $2, $3, $3, 'comment', 'c1', 'hi', $4, $5, 1, 1, true, $6, now() - interval '1 hour',
             CASE WHEN $7::boolean THEN now() - interval '30 minutes' END)
     RETURNING id::text, created_at`,
    [userId, type, key, emailChannel, randomUUID(), `corr-${key}`, o.withdrawn === true],
  );
  return { id: rows[0].id, userId, key, createdAt: rows[0].created_at };
}

const api = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
  const res = await rc.svc.app.inject({
    method,
    url,
    headers: bearer(rc.token()),
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });
  return { status: res.statusCode, body: res.json() };
};

it('counts each kind against the queue that should hold it, and re-drives each one to that queue only, with the original message id', async () => {
  // event: a mention notification-service.critical never processed; and one it did (an inbox row).
  const lostMention = buildEvent(
    'user.mentioned',
    { commentId: 'c1', postId: 'p1', actorId: 'bob', mentionedUserId: 'ada', excerpt: 'hi' },
    { producer: 'community-api' },
  );
  const doneMention = buildEvent(
    'user.mentioned',
    { commentId: 'c2', postId: 'p1', actorId: 'bob', mentionedUserId: 'ada', excerpt: 'hi' },
    { producer: 'community-api' },
  );
  await published('community-api', lostMention, lostMention.id);
  await published('community-api', doneMention, doneMention.id);
  await q(`INSERT INTO processed_events (consumer, event_id) VALUES ('notification-service.critical', $1)`, [
    doneMention.id,
  ]);

  // email: an immediate email and a security alert (always immediate, whatever its channel says), no ledger row.
  const email = await notified('ada', 'mention:c1:ada', 'mention', 'immediate');
  const alert = await notified('ada', 'security:1:ada', 'security_alert', 'digest');
  // digest: one item never collected; one the user opted out of (never collected by design: not due).
  const digest = await notified('ada', 'comment:c3:ada', 'comment', 'digest');
  await notified('cy', 'comment:c4:cy', 'comment', 'digest');
  // a sent email: not due.
  await notified('ada', 'mention:c5:ada', 'mention', 'immediate');
  // not due either: email off, and a notification withdrawn since (its comment deleted: nothing to announce).
  await notified('ada', 'mention:c7:ada', 'mention', 'off');
  await notified('ada', 'mention:c8:ada', 'mention', 'immediate', { withdrawn: true });
  // email-lease: its ledger row left 'sending' with the lease expired an hour ago; and another whose
  // notification was withdrawn since (counted, but there is nothing to re-drive it with).
  const leased = await notified('ada', 'mention:c6:ada', 'mention', 'immediate');
  await notified('ada', 'mention:c9:ada', 'mention', 'immediate', { withdrawn: true });
  // A notification.created in notification-service's outbox, as before the direct emission, without
  // its notification row: not the record of anything any more, so not counted.
  const legacy = buildEvent(
    'notification.created',
    {
      notificationId: randomUUID(),
      userId: 'ada',
      type: 'mention',
      idempotencyKey: 'mention:c10:ada',
      resourceType: 'comment',
      resourceId: 'c10',
      emailChannel: 'immediate',
    },
    { producer: 'notification-service' },
  );
  await published('notification-service', legacy, 'ada');
  await q(`INSERT INTO email_suppressions (user_id, scope) VALUES ('cy', 'digest')`);
  await q(
    `INSERT INTO email_deliveries (idempotency_key, channel, user_id, message_id, state, attempts, lease_token, lease_until, sent_at)
     VALUES ('mention:c5:ada', 'immediate', 'ada', 'm5', 'sent', 1, NULL, NULL, now() - interval '50 minutes'),
            ('mention:c6:ada', 'immediate', 'ada', 'm6', 'sending', 1, gen_random_uuid(), now() - interval '1 hour', NULL),
            ('mention:c9:ada', 'immediate', 'ada', 'm9', 'sending', 1, gen_random_uuid(), now() - interval '1 hour', NULL)`,
  );

  // fanout-chunk: a fan-out planned an hour ago whose second chunk never ran.
  await q(
    `INSERT INTO feed_fanout_jobs (post_id, author_id, published_at, active_since, chunks_total, chunks_done, planned_at) VALUES ('lp1', 's1', now() - interval '1 hour', now() - interval '30 days', 2, 1, now() - interval '1 hour')`,
  );
  await q(
    `INSERT INTO feed_fanout_chunks (post_id, chunk_no, after_follower, through_follower, attempts, done_at) VALUES ('lp1', 0, '', 's-3', 1, now()), ('lp1', 1, 's-3', 's-6', 0, NULL)`,
  );

  const check = await api('GET', '/v1/admin/lost-work');
  expect(check.status).toBe(200);
  const byQueue = Object.fromEntries(
    (
      check.body.queues as Array<{
        queue: string;
        due: number;
        lost: number;
        kinds: Array<{ kind: string; rows: number }>;
      }>
    ).map((x) => [
      x.queue,
      {
        due: x.due,
        lost: x.lost,
        kinds: Object.fromEntries(x.kinds.filter((k) => k.rows > 0).map((k) => [k.kind, k.rows])),
      },
    ]),
  );
  expect(byQueue).toEqual({
    'notification-service.critical': { due: 1, lost: 1, kinds: { event: 1 } },
    'email-service.send': { due: 5, lost: 5, kinds: { email: 2, digest: 1, 'email-lease': 2 } },
    'feed-service.fanout': { due: 1, lost: 1, kinds: { 'fanout-chunk': 1 } },
  });
  expect(check.body.ok).toBe(false);
  const status = await api('GET', '/v1/admin/status');
  expect(status.body.checks.find((c: { name: string }) => c.name === 'lost-work')).toMatchObject({
    ok: false,
    value: 7,
    runbook: 'docs/RUNBOOK.md#check-lost-work',
  });

  const since = new Date(Date.now() - 2 * 3_600_000).toISOString();
  // A dry run publishes nothing.
  const dry = await api('POST', '/v1/admin/lost-work/email/redrive', { since });
  expect(dry.body).toMatchObject({ kind: 'email', dryRun: true, matched: 2, republished: 0, more: false });
  expect((await vhost.depth('email-service.send')).total).toBe(0);

  // Applied, kind by kind: each message goes to its queue, with the event id as message id (the
  // outbox row's; for notification.created, the notification row's id).
  const messages = new Map<string, unknown>();
  const ids = async (queue: string) =>
    (await vhost.take(queue, 50)).map((m) => {
      messages.set(m.properties.message_id as string, JSON.parse(m.body));
      return {
        id: m.properties.message_id,
        type: m.properties.type,
        header: m.properties.headers?.['notification-type'],
      };
    });
  expect((await api('POST', '/v1/admin/lost-work/event/redrive', { since, apply: true })).body).toMatchObject({
    republished: 1,
  });
  expect(await ids('notification-service.critical')).toEqual([
    { id: lostMention.id, type: 'user.mentioned', header: undefined },
  ]);
  expect((await vhost.depth('notification-service.standard')).total).toBe(0);

  expect((await api('POST', '/v1/admin/lost-work/email/redrive', { since, apply: true })).body).toMatchObject({
    republished: 2,
  });
  expect((await api('POST', '/v1/admin/lost-work/digest/redrive', { since, apply: true })).body).toMatchObject({
    republished: 1,
  });
  const lease = await api('POST', '/v1/admin/lost-work/email-lease/redrive', { since, apply: true });
  expect(lease.body).toMatchObject({ matched: 2, republished: 1 });
  expect(lease.body.sample).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ id: leased.id, idempotencyKey: 'mention:c6:ada' }),
      expect.objectContaining({ id: 'key:mention:c9:ada', idempotencyKey: 'mention:c9:ada' }),
    ]),
  );
  expect(lease.body.skipped).toEqual([
    {
      id: 'key:mention:c9:ada',
      reason:
        'no notification row for this key any more (withdrawn, erased, or replaced under another key): nothing to announce; mark the ledger row failed',
    },
  ]);
  expect(new Set(await ids('email-service.send'))).toEqual(
    new Set([
      { id: email.id, type: 'notification.created', header: 'mention' },
      { id: alert.id, type: 'notification.created', header: 'security_alert' },
      { id: digest.id, type: 'notification.created', header: 'comment' },
      { id: leased.id, type: 'notification.created', header: 'mention' },
    ]),
  );
  // Each is the notification.created notification-service emitted, rebuilt from its row: the
  // contract accepts it, its occurredAt is the row's created_at and its correlation id the source's.
  for (const n of [email, alert, digest, leased]) {
    const body = messages.get(n.id);
    expect(validate(body).ok).toBe(true);
    expect(body).toMatchObject({
      id: n.id,
      type: 'notification.created',
      producer: 'notification-service',
      occurredAt: n.createdAt.toISOString(),
      correlationId: `corr-${n.key}`,
      data: { notificationId: n.id, userId: n.userId, idempotencyKey: n.key, excerpt: 'hi', push: true },
    });
  }
  // Straight to the queue: the critical lane, bound by header on the topic's route, gets no copy.
  expect((await vhost.depth('email-service.send-critical')).total).toBe(0);

  expect((await api('POST', '/v1/admin/lost-work/fanout-chunk/redrive', { since, apply: true })).body).toMatchObject({
    republished: 1,
    sample: [{ id: 'lp1#1' }],
  });
  const [chunk] = await vhost.take('feed-service.fanout', 10);
  expect(JSON.parse(chunk.body)).toMatchObject({ type: 'feed.fanout-chunk', data: { postId: 'lp1', chunkNo: 1 } });

  // The window is the operator's: nothing due before `since`, and since ≥ until is refused.
  expect(
    (await api('POST', '/v1/admin/lost-work/email/redrive', { since: new Date(Date.now() + 60_000).toISOString() }))
      .body,
  ).toMatchObject({ statusCode: 400, code: 'RC_REDRIVE_WINDOW' });
  expect(
    (
      await api('POST', '/v1/admin/lost-work/email/redrive', {
        since,
        until: new Date(Date.now() - 90 * 60_000).toISOString(),
      })
    ).body,
  ).toMatchObject({ matched: 0 });
  expect((await api('POST', '/v1/admin/lost-work/other/redrive', { since })).status).toBe(400);
});
