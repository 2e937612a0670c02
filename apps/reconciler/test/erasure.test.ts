// The erasure request's write path (docs/RUNBOOK.md "Erasure"): the audit row and user.erased are
// one transaction in the reconciler's outbox, so a reconciler that dies after answering loses
// nothing (another replica's relay publishes the event), and a failed write leaves no audit row for
// an erasure that will never happen.
import amqplib from 'amqplib';
import { buildEvent, validate } from '@community/contracts';
import { eventually } from '@community/testing';
import { bearer, createTestDatabase, createTestVhost, startReconciler, type Reconciler } from './harness';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let vhost: Awaited<ReturnType<typeof createTestVhost>>;
const started: Reconciler[] = [];

beforeAll(async () => {
  [db, vhost] = await Promise.all([createTestDatabase('rc_erasure'), createTestVhost('rc-erasure')]);
});

afterAll(async () => {
  for (const r of started) await r.close();
  await Promise.all([vhost?.delete(), db?.drop()]);
});

async function erase(rc: Reconciler, userId: string, headers: Record<string, string> = {}) {
  const res = await rc.svc.app.inject({
    method: 'POST',
    url: `/v1/admin/users/${encodeURIComponent(userId)}/erasure`,
    headers: { ...bearer(rc.token('volunteer')), ...headers },
  });
  return {
    status: res.statusCode,
    body: res.json() as { erasureId: string; eventId: string; userId: string; requestedBy: string },
  };
}

it('writes the audit row and user.erased together; a replica started later publishes what a reconciler without a broker left', async () => {
  // A reconciler that never publishes (no broker): as if it died right after its commit.
  const offline = await startReconciler(db, undefined);
  started.push(offline);
  const answer = await erase(offline, 'ada@example');
  expect(answer).toMatchObject({ status: 202, body: { userId: 'ada@example', requestedBy: 'volunteer' } });
  const { rows: audit } = await offline.svc.pool.query(
    `SELECT user_id, requested_by, event_id::text FROM user_erasures WHERE id = $1`,
    [answer.body.erasureId],
  );
  expect(audit).toEqual([{ user_id: 'ada@example', requested_by: 'volunteer', event_id: answer.body.eventId }]);
  const { rows: outbox } = await offline.svc.pool.query(
    `SELECT producer, aggregate_id, sent_at, payload FROM outbox_messages WHERE event_id = $1`,
    [answer.body.eventId],
  );
  expect(outbox).toEqual([
    {
      producer: 'reconciler',
      aggregate_id: 'ada@example',
      sent_at: null,
      payload: expect.objectContaining({
        type: 'user.erased',
        data: { userId: 'ada@example', erasureId: answer.body.erasureId },
      }),
    },
  ]);
  expect(validate(outbox[0].payload).ok).toBe(true);

  // A replica with the broker: its relay publishes the row (confirmed, then marked sent).
  const online = await startReconciler(db, vhost);
  started.push(online);
  await eventually(
    'the outbox row is sent',
    async () =>
      (
        await online.svc.pool.query(`SELECT 1 FROM outbox_messages WHERE event_id = $1 AND sent_at IS NOT NULL`, [
          answer.body.eventId,
        ])
      ).rowCount === 1,
  );
  const conn = await amqplib.connect(vhost.url);
  try {
    const ch = await conn.createChannel();
    // Nobody consumes email-service.users here: the event waits in it, as routed by the topology.
    const msg = await eventually(
      'user.erased in email-service.users',
      async () => (await ch.get('email-service.users', { noAck: true })) || undefined,
    );
    expect(msg.properties).toMatchObject({ messageId: answer.body.eventId, type: 'user.erased', userId: 'guest' });
    expect(JSON.parse(msg.content.toString())).toMatchObject({
      id: answer.body.eventId,
      producer: 'reconciler',
      data: { userId: 'ada@example', erasureId: answer.body.erasureId },
    });
  } finally {
    await conn.close();
  }
  const status = await online.svc.app.inject({
    method: 'GET',
    url: `/v1/admin/erasures/${answer.body.erasureId}`,
    headers: bearer(online.token('volunteer')),
  });
  expect(status.json()).toMatchObject({
    erasureId: answer.body.erasureId,
    publishedAt: expect.any(String),
    done: false,
    consumers: [
      { consumer: 'notification-service.standard', processedAt: null },
      { consumer: 'email-service.users', processedAt: null },
      { consumer: 'feed-service.activity', processedAt: null },
      { consumer: 'push-service.send', processedAt: null },
    ],
  });
}, 60_000);

it('records no audit row when the event cannot be written (one transaction)', async () => {
  const rc = started[0];
  // The outbox refuses this one user's event: the audit row inserted just before must roll back.
  await rc.svc.pool.query(`CREATE FUNCTION refuse_doomed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.payload->'data'->>'userId' = 'doomed' THEN RAISE EXCEPTION 'outbox refused'; END IF; RETURN NEW; END $$`);
  await rc.svc.pool.query(
    `CREATE TRIGGER refuse_doomed BEFORE INSERT ON outbox_messages FOR EACH ROW EXECUTE FUNCTION refuse_doomed()`,
  );
  try {
    const answer = await erase(rc, 'doomed', { 'idempotency-key': 'doomed-1' });
    expect(answer.status).toBe(500);
    expect(
      (await rc.svc.pool.query(`SELECT 1 FROM user_erasures WHERE user_id = 'doomed' OR request_key = 'doomed-1'`))
        .rows,
    ).toEqual([]);
  } finally {
    await rc.svc.pool.query(`DROP TRIGGER refuse_doomed ON outbox_messages; DROP FUNCTION refuse_doomed()`);
  }
  // The same request again, once the outbox takes it: now recorded (the key was not used up).
  expect((await erase(rc, 'doomed', { 'idempotency-key': 'doomed-1' })).status).toBe(202);
});

it("takes user ids up to the router's 100 characters, refuses longer ones, and an erasure id that is not one", async () => {
  const rc = started[0];
  // fastify's maxParamLength (100), the same bound as every /v1/users/:userId route of the system.
  expect((await erase(rc, 'x'.repeat(100))).status).toBe(202);
  expect((await erase(rc, 'x'.repeat(101))).status).toBe(414);
  const res = await rc.svc.app.inject({
    method: 'GET',
    url: '/v1/admin/erasures/abc',
    headers: bearer(rc.token('volunteer')),
  });
  expect(res.statusCode).toBe(400);
  const missing = await rc.svc.app.inject({
    method: 'GET',
    url: '/v1/admin/erasures/999999',
    headers: bearer(rc.token('volunteer')),
  });
  expect(missing.json()).toMatchObject({ statusCode: 404, code: 'RC_UNKNOWN_ERASURE' });
});

it("a user's own account deletion (user.deleted) becomes the same erasure, cause account_deleted, once however often it is delivered", async () => {
  const rc = started[1]; // the replica with the broker: it consumes reconciler.account-deletions
  const deletion = buildEvent('user.deleted', { userId: 'gone@example' }, { producer: 'community-api' });
  const conn = await amqplib.connect(vhost.url);
  try {
    const ch = await conn.createConfirmChannel();
    for (let i = 0; i < 2; i++)
      // the producer's retry: the same event twice
      ch.publish('community.events', 'user.deleted', Buffer.from(JSON.stringify(deletion)), {
        persistent: true,
        contentType: 'application/json',
        messageId: deletion.id,
        type: 'user.deleted',
        userId: 'guest',
      });
    await ch.waitForConfirms();
  } finally {
    await conn.close();
  }
  const audit = await eventually('the audit row', async () => {
    const { rows } = await rc.svc.pool.query(
      `SELECT id::text, requested_by, event_id::text FROM user_erasures WHERE user_id = 'gone@example'`,
    );
    return rows.length ? rows : undefined;
  });
  expect(audit).toEqual([
    expect.objectContaining({ requested_by: 'account deletion (user.deleted from community-api)' }),
  ]);
  const { rows: outbox } = await rc.svc.pool.query(`SELECT payload FROM outbox_messages WHERE event_id = $1`, [
    audit[0].event_id,
  ]);
  expect(outbox.map((r) => r.payload.data)).toEqual([
    { userId: 'gone@example', erasureId: audit[0].id, cause: 'account_deleted' },
  ]);
  // The second copy was absorbed by the request key (the event id): still one audit row.
  await eventually('both copies acked', async () => (await vhost.depth('reconciler.account-deletions')).total === 0);
  const { rows } = await rc.svc.pool.query(
    `SELECT count(*)::int AS n FROM user_erasures WHERE user_id = 'gone@example'`,
  );
  expect(rows[0].n).toBe(1);
});
