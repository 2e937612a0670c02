import amqplib from 'amqplib';
import { managementRequest } from '@community/messaging';
import { eventually } from '@community/testing';
import { readDeadLetter } from '../src/dlq/dead-letter';
import { createOperation, insertDeadLetter } from '../src/dlq/store';
import { EXCHANGE, OTHER, orderId, startDlqHarness, TINY, WORK, type DlqHarness } from './dlq-harness';

/**
 * The DLQ console against a real broker and database: messages dead-lettered by a real consumer are
 * read into Postgres, grouped by cause, replayed to their original queue only, and discarded, each
 * action acting on exactly what its filter selects and leaving an audit trail.
 */
let h: DlqHarness;

beforeAll(async () => {
  // A replay untouched for 2 s counts as orphaned (a runner touches it at every message).
  h = await startDlqHarness('dlq', { replayStaleMs: 2000, replaySweepMs: 200 });
});
afterAll(async () => h?.close());

async function api(method: 'GET' | 'POST', url: string, body?: unknown, sub = 'alice') {
  const res = await h.app.inject({ method, url, headers: h.adminHeaders(sub), payload: body as never });
  return { status: res.statusCode, body: res.json() };
}

async function waitDone(operationId: string) {
  return eventually(
    `operation ${operationId} done`,
    async () => {
      const op = await api('GET', `/v1/admin/dlq/operations/${operationId}`);
      return op.body.state !== 'running' ? op.body : undefined;
    },
    15_000,
    50,
  );
}

async function metric(name: string): Promise<number> {
  const m = await h.registry.getSingleMetric(name)?.get();
  return (m?.values ?? []).reduce((n, v) => n + v.value, 0);
}

async function states(ids: string[]): Promise<string[]> {
  const { rows } = await h.pool.query(`SELECT state FROM dlq_messages WHERE message_id = ANY($1) ORDER BY message_id`, [
    ids,
  ]);
  return rows.map((r) => r.state);
}

describe('ingest, grouping and inspection', () => {
  const stock = [orderId(), orderId(), orderId()];
  const address = [orderId()];

  beforeAll(async () => {
    await h.deadLetter([
      ...stock.map((id, i) => ({ id, type: 'order.placed', reason: `item ${100 + i} out of stock for order ${id}` })),
      ...address.map((id) => ({
        id,
        type: 'order.placed',
        reason: `no shipping address for bob${id.slice(0, 4)}@example.org`,
      })),
    ]);
  });

  it('stores every dead letter once, groups them by cause, and counts each new cause once', async () => {
    const { body } = await api('GET', '/v1/admin/dlq/groups');
    const mine = body.groups.filter((g: { sampleMessage: string }) =>
      /out of stock|shipping address/.test(g.sampleMessage),
    );
    expect(
      mine
        .map((g: { count: number; errorClass: string; normalized: string; handler: string }) => [
          g.count,
          g.errorClass,
          g.normalized,
          g.handler,
        ])
        .sort(),
    ).toEqual([
      [1, 'PermanentError', 'no shipping address for <email>', `${WORK}-handler`],
      [3, 'PermanentError', 'item <n> out of stock for order <uuid>', `${WORK}-handler`],
    ]);
    expect(await metric('reconciler_dlq_new_causes_total')).toBe(2);
    const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM dlq_messages WHERE message_id = ANY($1)`, [
      [...stock, ...address],
    ]);
    expect(rows[0].n).toBe(4);
  });

  it('summarises each DLQ of the topology with its pending count and oldest age, and the broker DLQ is drained', async () => {
    const { body } = await api('GET', '/v1/admin/dlq');
    const work = body.queues.find((q: { queue: string }) => q.queue === `${WORK}.dlq`);
    expect(work).toMatchObject({ originalQueue: WORK, pending: expect.any(Number) });
    expect(work.pending).toBeGreaterThanOrEqual(4);
    // The oldest is the earliest stored dead-letter time of the pending rows.
    const { rows } = await h.pool.query(
      `SELECT min(dead_lettered_at) AS oldest FROM dlq_messages WHERE queue = $1 AND state = 'pending'`,
      [`${WORK}.dlq`],
    );
    expect(work.oldestDeadLetteredAt).toBe(new Date(rows[0].oldest).toISOString());
    expect(body.queues.find((q: { queue: string }) => q.queue === `${OTHER}.dlq`)).toMatchObject({ pending: 0 });
    expect(body.check).toMatchObject({ name: 'dlq', ok: false, runbook: 'docs/RUNBOOK.md#check-dlq' });
    expect(await h.vhost.ready(`${WORK}.dlq`)).toBe(0);
    const scraped = await h.registry.metrics();
    expect(scraped).toMatch(new RegExp(`reconciler_dlq_messages\\{queue="${WORK}.dlq"\\} ([4-9]|\\d{2,})`));
  });

  it('reports the age of the oldest pending dead letter: the time since it was dead-lettered', async () => {
    // A dead letter from two hours ago and one from now, as a consumer of OTHER would have written
    // them (x-dead-lettered-at is the dead-letter time the console stores): the old one's age is
    // the one reported.
    const [id, recent] = [orderId(), orderId()];
    const ageSeconds = 2 * 3600;
    const deadLetteredAt = new Date(Date.now() - ageSeconds * 1000);
    const conn = await amqplib.connect(h.vhost.url);
    try {
      const ch = await conn.createConfirmChannel();
      for (const [messageId, at] of [
        [recent, new Date()],
        [id, deadLetteredAt],
      ] as const) {
        ch.sendToQueue(`${OTHER}.dlq`, Buffer.from(JSON.stringify({ id: messageId, type: 'order.placed' })), {
          messageId,
          persistent: true,
          headers: {
            'x-error-class': 'PermanentError',
            'x-error-message': 'a failure',
            'x-original-queue': OTHER,
            'x-dead-lettered-at': at.toISOString(),
          },
        });
      }
      await ch.waitForConfirms();
    } finally {
      await conn.close();
    }
    await eventually(
      'both dead letters stored',
      async () =>
        (await h.pool.query(`SELECT 1 FROM dlq_messages WHERE message_id = ANY($1)`, [[id, recent]])).rowCount === 2,
    );
    const { body } = await api('GET', '/v1/admin/dlq');
    const other = body.queues.find((q: { queue: string }) => q.queue === `${OTHER}.dlq`);
    expect(other).toMatchObject({ pending: 2, oldestDeadLetteredAt: deadLetteredAt.toISOString() });
    // At least its age when it was sent; the upper slack only covers the time this test took since.
    expect(other.oldestAgeSeconds).toBeGreaterThanOrEqual(ageSeconds);
    expect(other.oldestAgeSeconds).toBeLessThan(ageSeconds + 600);
    // The same figure on /metrics (read from the table at scrape time).
    const scraped = (await h.registry.getSingleMetric('reconciler_dlq_oldest_age_seconds')?.get())?.values.find(
      (v) => v.labels.queue === `${OTHER}.dlq`,
    )?.value;
    expect(scraped).toBeGreaterThanOrEqual(ageSeconds);
    expect(scraped).toBeLessThan(ageSeconds + 600);
    // Decided, as a volunteer would: no pending dead letter of OTHER is left for the tests below.
    const done = await api('POST', '/v1/admin/dlq/discard', { filter: { queue: `${OTHER}.dlq` }, dryRun: false });
    expect(done.body).toMatchObject({ matched: 2, discarded: 2 });
  });

  it('shows a message: payload beside its error, headers, attempts, original queue', async () => {
    const list = await api('GET', `/v1/admin/dlq/messages?q=${address[0]}`);
    expect(list.body.total).toBe(1);
    const { body } = await api('GET', `/v1/admin/dlq/messages/${list.body.items[0].id}`);
    expect(body).toMatchObject({
      messageId: address[0],
      originalQueue: WORK,
      queue: `${WORK}.dlq`,
      errorClass: 'PermanentError',
      errorKind: 'permanent',
      attempts: 1,
      messageType: 'order.placed',
      bodyJson: { id: address[0], type: 'order.placed' },
      headers: { 'x-original-queue': WORK, 'x-error-class': 'PermanentError' },
      state: 'pending',
    });
  });

  it('answers 404 for an unknown message, 400 for a bad filter, 401 without a token, 403 without the admin scope', async () => {
    expect((await api('GET', '/v1/admin/dlq/messages/999999')).body.code).toBe('RC_DLQ_MESSAGE_NOT_FOUND');
    const bad = await api('GET', '/v1/admin/dlq/messages?state=lost');
    expect([bad.status, bad.body.code]).toEqual([400, 'RC_DLQ_INVALID_FILTER']);
    // Text Postgres cannot hold, or a time it cannot read (found by the fuzz suite): 400, not 500.
    for (const url of [
      '/v1/admin/dlq/messages?q=a%00b',
      '/v1/admin/dlq/groups?queue=%00',
      '/v1/admin/dlq/messages?since=%2B275760-09-13T00%3A00%3A00Z',
    ]) {
      const res = await api('GET', url);
      expect([url, res.status, res.body.code]).toEqual([url, 400, 'RC_DLQ_INVALID_FILTER']);
    }
    const nul = await api('POST', '/v1/admin/dlq/replay', { filter: { q: 'x\u0000' } });
    expect([nul.status, nul.body.code]).toEqual([400, 'RC_DLQ_INVALID_FILTER']);
    const both = await api('POST', '/v1/admin/dlq/replay', { ids: ['1'], filter: {}, dryRun: true });
    expect([both.status, both.body.code]).toEqual([400, 'RC_DLQ_INVALID_SELECTION']);
    expect((await h.app.inject({ url: '/v1/admin/dlq' })).statusCode).toBe(401);
    expect(
      (await h.app.inject({ url: '/v1/admin/dlq', headers: { authorization: `Bearer ${h.token('mallory')}` } }))
        .statusCode,
    ).toBe(403);
  });
});

describe('replay', () => {
  it('a dry run says what and how many, and changes nothing', async () => {
    const ids = [orderId(), orderId()];
    await h.deadLetter(ids.map((id) => ({ id, type: 'order.placed', reason: `dry ${id}` })));
    h.poisoned.clear();
    const before = await h.pool.query(
      `SELECT (SELECT count(*) FROM dlq_operations)::int AS ops, (SELECT count(*) FROM test_deliveries)::int AS deliveries`,
    );
    const group = (await api('GET', `/v1/admin/dlq/messages?q=${ids[0]}`)).body.items[0].fingerprint;

    const { status, body } = await api('POST', '/v1/admin/dlq/replay', { filter: { group } });
    expect(status).toBe(200);
    expect(body).toMatchObject({ dryRun: true, matched: 2, byQueue: [{ originalQueue: WORK, count: 2 }] });
    expect(body.sample.map((m: { messageId: string }) => m.messageId).sort()).toEqual([...ids].sort());

    // No wait needed: a replay publishes only an operation's items, and a real replay creates its
    // operation in the request's own transaction, before it answers. No new operation row now means
    // nothing was, or will be, published.
    const after = await h.pool.query(
      `SELECT (SELECT count(*) FROM dlq_operations)::int AS ops, (SELECT count(*) FROM test_deliveries)::int AS deliveries`,
    );
    expect(after.rows[0]).toEqual(before.rows[0]);
    expect(await states(ids)).toEqual(['pending', 'pending']);
  });

  it('a replayed group ends processed once, on its original queue only, audited; a second replay changes nothing', async () => {
    const ids = [orderId(), orderId(), orderId()];
    const bystander = orderId();
    await h.deadLetter([
      ...ids.map((id) => ({ id, type: 'order.placed', reason: `payment gateway said no to order ${id}` })),
      { id: bystander, type: 'order.placed', reason: 'another cause' },
    ]);
    // Each order also reached OTHER once, through the topic exchange, when it was published.
    for (const id of ids) expect(await h.processed(OTHER, id)).toEqual({ processed: 1, deliveries: 1 });
    h.poisoned.clear(); // the bug is fixed
    const group = (await api('GET', `/v1/admin/dlq/messages?q=${ids[0]}`)).body.items[0].fingerprint;
    const actionsBefore = await metric('reconciler_dlq_actions_total');

    const preview = await api('POST', '/v1/admin/dlq/replay', { filter: { group }, dryRun: true });
    expect(preview.body.matched).toBe(3);
    const started = await api(
      'POST',
      '/v1/admin/dlq/replay',
      { filter: { group, asOf: preview.body.asOf }, dryRun: false, ratePerSecond: 20 },
      'carol',
    );
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ operationId: expect.any(String), matched: 3 });
    const op = await waitDone(started.body.operationId);
    expect(op).toMatchObject({
      state: 'done',
      matched: 3,
      succeeded: 3,
      failed: 0,
      skipped: 0,
      remaining: 0,
      requestedBy: 'carol',
      ratePerSecond: 20,
    });

    await eventually('replayed orders processed', async () => {
      for (const id of ids) if ((await h.processed(WORK, id)).processed !== 1) return false;
      return true;
    });
    for (const id of ids) {
      expect(await h.processed(WORK, id)).toEqual({ processed: 1, deliveries: 2 }); // the failed try and the replay
      expect(await h.processed(OTHER, id)).toEqual({ processed: 1, deliveries: 1 }); // never through the topic exchange
    }
    expect(await states(ids)).toEqual(['replayed', 'replayed', 'replayed']);
    expect(await states([bystander])).toEqual(['pending']);
    const audit = await h.pool.query(
      `SELECT o.action, o.requested_by, i.result, m.message_id FROM dlq_operation_items i JOIN dlq_operations o ON o.id = i.operation_id
         JOIN dlq_messages m ON m.id = i.message_id WHERE o.id = $1 ORDER BY m.message_id`,
      [op.id],
    );
    expect(audit.rows).toEqual(
      [...ids].sort().map((id) => ({ action: 'replay', requested_by: 'carol', result: 'replayed', message_id: id })),
    );
    expect((await metric('reconciler_dlq_actions_total')) - actionsBefore).toBe(3);

    // Replay the same messages again: delivered once more, processed no more (the consumer's inbox).
    const again = await api('POST', '/v1/admin/dlq/replay', {
      filter: { group, state: 'replayed' },
      dryRun: false,
      ratePerSecond: 100,
    });
    expect(again.body.matched).toBe(3);
    await waitDone(again.body.operationId);
    await eventually('second replay delivered', async () => {
      for (const id of ids) if ((await h.processed(WORK, id)).deliveries !== 3) return false;
      return true;
    });
    for (const id of ids) expect(await h.processed(WORK, id)).toEqual({ processed: 1, deliveries: 3 });
    const detail = await api(
      'GET',
      `/v1/admin/dlq/messages/${(await api('GET', `/v1/admin/dlq/messages?q=${ids[0]}&state=replayed`)).body.items[0].id}`,
    );
    expect(detail.body).toMatchObject({
      replayCount: 2,
      history: [
        { action: 'replay', result: 'replayed' },
        { action: 'replay', result: 'replayed' },
      ],
    });
  });

  it('is throttled to ratePerSecond', async () => {
    // The throttle (replay.ts): the k-th message is published no earlier than k × (1000 / rate) ms
    // after the runner started, which is after the operation was created; a runner that fell behind
    // may catch up on at most 1 s of its schedule at once. Each audit item is stamped (Postgres
    // now()) after its publish was confirmed and before the next publish, so the stamps bound the
    // publish times: item k's stamp ≥ publish k, item k-1's ≤ publish k. Both bounds below follow
    // from that arithmetic, measured on the database's clock, whatever the machine's load.
    const n = 30;
    const rate = 10;
    const intervalMs = 1000 / rate;
    const timerSlackMs = 5; // a timer may fire ~1 ms early; the two clocks round differently
    const ids = Array.from({ length: n }, orderId);
    await h.deadLetter(ids.map((id) => ({ id, type: 'order.placed', reason: `throttle ${id}` })));
    h.poisoned.clear();
    const group = (await api('GET', `/v1/admin/dlq/messages?q=${ids[0]}`)).body.items[0].fingerprint;
    const started = await api('POST', '/v1/admin/dlq/replay', {
      filter: { group },
      dryRun: false,
      ratePerSecond: rate,
    });
    expect(started.body.matched).toBe(n);
    const op = await waitDone(started.body.operationId);
    expect(op).toMatchObject({ state: 'done', succeeded: n, failed: 0 });
    const { rows } = await h.pool.query<{ ms: number }>(
      `SELECT extract(epoch FROM i.at - o.created_at)::float8 * 1000 AS ms FROM dlq_operation_items i JOIN dlq_operations o ON o.id = i.operation_id
        WHERE o.id = $1::bigint ORDER BY i.at`,
      [op.id],
    );
    const at = rows.map((r) => r.ms);
    expect(at).toHaveLength(n);
    // Lower bound, from the start: at most k messages in the first k × interval ms, so the whole
    // replay of n takes at least (n - 1) intervals (2.9 s here: ceil(30 / 10) - 1 windows of 1 s and
    // then some); an unthrottled replay stamps them all within a few ms.
    const early = at.map((ms, k) => ({ k, ms })).filter(({ k, ms }) => ms < k * intervalMs - timerSlackMs);
    expect(early).toEqual([]);
    // Upper bound on any window, catch-up included: j - i + 1 messages stamped within a window
    // span at least (j - i - 2) intervals minus the 1 s of catch-up, so no 1-s window holds more
    // than 2 × rate + 3 of them.
    const maxPerSecond = Math.max(...at.map((ms, i) => at.filter((x, j) => j >= i && x - ms < 1000).length));
    expect(maxPerSecond).toBeLessThanOrEqual(2 * rate + 3);
  }, 30_000);
});

describe('a replay whose runner died', () => {
  it('is taken over and finishes, each message processed once', async () => {
    const ids = [orderId(), orderId()];
    await h.deadLetter(ids.map((id) => ({ id, type: 'order.placed', reason: `orphan ${id}` })));
    h.poisoned.clear();
    const group = (await api('GET', `/v1/admin/dlq/messages?q=${ids[0]}`)).body.items[0].fingerprint;
    // What a replica that crashed right after accepting the request leaves behind: the operation,
    // its items, one message already claimed ('replaying'), and a heartbeat from long ago.
    const client = await h.pool.connect();
    let operationId: string;
    try {
      await client.query('BEGIN');
      ({ id: operationId } = await createOperation(client, {
        action: 'replay',
        requestedBy: 'gone',
        selection: { filter: { group } },
        ratePerSecond: 100,
      }));
      await client.query(`UPDATE dlq_messages SET state = 'replaying' WHERE message_id = $1`, [ids[0]]);
      await client.query(`UPDATE dlq_operations SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [
        operationId,
      ]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const op = await waitDone(operationId);
    expect(op).toMatchObject({ state: 'done', matched: 2, succeeded: 2 });
    for (const id of ids)
      await eventually(`${id} processed`, async () => (await h.processed(WORK, id)).processed === 1);
    expect(await states(ids)).toEqual(['replayed', 'replayed']);
  });
});

describe('discard', () => {
  it('acts on exactly what the filter selects, is audited, and a discarded message never comes back with "replay all"', async () => {
    const drop = [orderId(), orderId()];
    const keep = [orderId()];
    await h.deadLetter([
      ...drop.map((id) => ({ id, type: 'order.placed', reason: `spam order ${id}` })),
      ...keep.map((id) => ({ id, type: 'order.placed', reason: `legit but failing ${id}` })),
    ]);
    const group = (await api('GET', `/v1/admin/dlq/messages?q=${drop[0]}`)).body.items[0].fingerprint;

    const preview = await api('POST', '/v1/admin/dlq/discard', { filter: { group } });
    expect(preview.body).toMatchObject({ dryRun: true, matched: 2 });
    expect(await states(drop)).toEqual(['pending', 'pending']);

    const done = await api(
      'POST',
      '/v1/admin/dlq/discard',
      { filter: { group, asOf: preview.body.asOf }, dryRun: false },
      'dave',
    );
    expect(done.body).toMatchObject({ dryRun: false, matched: 2, discarded: 2, skipped: 0 });
    expect(await states(drop)).toEqual(['discarded', 'discarded']);
    expect(await states(keep)).toEqual(['pending']);
    const audit = await h.pool.query(
      `SELECT o.requested_by, o.state, i.result FROM dlq_operation_items i JOIN dlq_operations o ON o.id = i.operation_id WHERE o.id = $1`,
      [done.body.operationId],
    );
    expect(audit.rows).toEqual([
      { requested_by: 'dave', state: 'done', result: 'discarded' },
      { requested_by: 'dave', state: 'done', result: 'discarded' },
    ]);

    // "Replay all" (every pending message, and even every replayed one) leaves discarded ones alone.
    h.poisoned.clear();
    const all = await api('POST', '/v1/admin/dlq/replay', { filter: {}, dryRun: true });
    const pendingNow = await h.pool.query(`SELECT count(*)::int AS n FROM dlq_messages WHERE state = 'pending'`);
    expect(all.body.matched).toBe(pendingNow.rows[0].n);
    const byIds = await api('POST', '/v1/admin/dlq/replay', {
      ids: (await h.pool.query(`SELECT id::text FROM dlq_messages WHERE message_id = ANY($1)`, [drop])).rows.map(
        (r) => r.id,
      ),
      dryRun: true,
    });
    expect(byIds.body.matched).toBe(0);
    const real = await api('POST', '/v1/admin/dlq/replay', { filter: {}, dryRun: false, ratePerSecond: 200 });
    await waitDone(real.body.operationId);
    expect(await states(drop)).toEqual(['discarded', 'discarded']);
    for (const id of drop) expect((await h.processed(WORK, id)).deliveries).toBe(1);
  });
});

describe('ingest after the broker connection is lost', () => {
  it('reconnects by itself and stores what is dead-lettered afterwards, once', async () => {
    await h.vhost.closeConnections();
    const ids = [orderId(), orderId()];
    await h.deadLetter(ids.map((id) => ({ id, type: 'order.placed', reason: `after reconnect ${id}` })));
    const { rows } = await h.pool.query(`SELECT message_id FROM dlq_messages WHERE message_id = ANY($1) ORDER BY 1`, [
      ids,
    ]);
    expect(rows.map((r) => r.message_id)).toEqual([...ids].sort());
    await eventually(
      'the ingest consumes every DLQ again',
      async () => (await api('GET', '/v1/admin/dlq')).body.consuming.length === 3,
    );
  });
});

describe('copies dead-lettered by the broker itself', () => {
  it("are stored with the broker's reason as their cause and their original queue from x-death", async () => {
    const ids = [orderId(), orderId(), orderId()];
    for (const id of ids) {
      await h.messaging.publisher.publish(
        { id, type: 'order.tiny', version: 1, occurredAt: new Date().toISOString(), correlationId: id },
        { exchange: EXCHANGE, routingKey: 'order.tiny' },
      );
    }
    // max-length 1, overflow drop-head: the two oldest go to the DLQ through the DLX.
    const stored = await eventually('overflow stored', async () => {
      const { rows } = await h.pool.query(`SELECT * FROM dlq_messages WHERE message_id = ANY($1) ORDER BY id`, [ids]);
      return rows.length === 2 ? rows : undefined;
    });
    expect(stored.map((r) => r.message_id).sort()).toEqual(ids.slice(0, 2).sort()); // the two oldest; stored concurrently, in any order
    for (const r of stored) {
      expect(r).toMatchObject({
        queue: `${TINY}.dlq`,
        original_queue: TINY,
        error_class: 'broker:maxlen',
        error_kind: 'maxlen',
        message_type: 'order.tiny',
        handler: null,
      });
      expect(Math.abs(new Date(r.dead_lettered_at).getTime() - Date.now())).toBeLessThan(60_000);
    }
    const { body } = await api('GET', `/v1/admin/dlq/groups?queue=${TINY}.dlq`);
    expect(body.groups).toMatchObject([
      { count: 2, errorClass: 'broker:maxlen', normalized: `dead-lettered by the broker (maxlen) from ${TINY}` },
    ]);
  });
});

describe('a message whose original queue is not a work queue of the topology', () => {
  it('is not published anywhere: recorded failed with the reason, and stays pending', async () => {
    const id = orderId();
    const letter = readDeadLetter('legacy.orders.dlq', {
      content: Buffer.from(JSON.stringify({ id, type: 'order.placed' })),
      fields: {
        routingKey: 'legacy.orders',
        exchange: '',
        deliveryTag: 1,
        redelivered: false,
        consumerTag: 'x',
      } as never,
      properties: {
        messageId: id,
        headers: {
          'x-error-class': 'PermanentError',
          'x-error-message': 'legacy',
          'x-original-queue': 'legacy.orders',
        },
      } as never,
    });
    const client = await h.pool.connect();
    try {
      await insertDeadLetter(client, letter);
    } finally {
      client.release();
    }
    const started = await api('POST', '/v1/admin/dlq/replay', {
      filter: { originalQueue: 'legacy.orders' },
      dryRun: false,
    });
    expect(started.body.matched).toBe(1);
    const op = await waitDone(started.body.operationId);
    expect(op).toMatchObject({ state: 'done', succeeded: 0, failed: 1 });
    const detail = await api('GET', `/v1/admin/dlq/messages?originalQueue=legacy.orders`);
    expect(detail.body.items).toMatchObject([{ messageId: id, state: 'pending' }]);
    const item = await h.pool.query(`SELECT result, detail FROM dlq_operation_items WHERE operation_id = $1`, [op.id]);
    expect(item.rows).toEqual([
      { result: 'failed', detail: "original queue 'legacy.orders' is not a work queue of the topology" },
    ]);
  });
});

describe('a dead letter with bytes Postgres cannot store in text or jsonb', () => {
  it('is stored with those bytes replaced by U+FFFD and acked, not retried forever', async () => {
    // A NUL byte in an error text (a consumer echoing a binary payload): Postgres refuses \u0000 in
    // text and jsonb (SQLSTATE 22P05 / 22021), so the insert fails the same way at every retry.
    const id = orderId();
    const conn = await amqplib.connect(h.vhost.url);
    try {
      const ch = await conn.createConfirmChannel();
      ch.sendToQueue(`${WORK}.dlq`, Buffer.from(`{"id":"${id}","note":"a\u0000b"}\u0000`), {
        messageId: id,
        type: 'order\u0000placed',
        persistent: true,
        headers: {
          'x-error-class': 'PermanentError',
          'x-error-message': 'bad byte \u0000 in input',
          'x-original-queue': WORK,
          'x-handler': `${WORK}-handler`,
          'x-dead-lettered-at': new Date().toISOString(),
          'x-trace\u0000': Buffer.from('bin\u0000ary'),
        },
      });
      await ch.waitForConfirms();
    } finally {
      await conn.close();
    }
    const row = await eventually(
      'the dead letter stored',
      async () => (await h.pool.query(`SELECT * FROM dlq_messages WHERE message_id = $1`, [id])).rows[0],
      30_000,
    );
    expect(row).toMatchObject({
      error_class: 'PermanentError',
      error_message: 'bad byte \uFFFD in input',
      message_type: 'order\uFFFDplaced',
      original_queue: WORK,
      state: 'pending',
    });
    expect(row.headers).toMatchObject({
      'x-error-message': 'bad byte \uFFFD in input',
      'x-trace\uFFFD': 'bin\uFFFDary',
    });
    // The body is bytes (bytea): kept exactly as it was sent.
    expect(Buffer.compare(row.body, Buffer.from(`{"id":"${id}","note":"a\u0000b"}\u0000`))).toBe(0);
    const { rows: groups } = await h.pool.query(`SELECT sample_message FROM dlq_groups WHERE fingerprint = $1`, [
      row.fingerprint,
    ]);
    expect(groups).toEqual([{ sample_message: 'bad byte \uFFFD in input' }]);
    // Acked: the DLQ holds nothing, ready or unacked (as the management API counts it).
    await eventually(
      'the DLQ empty',
      async () => {
        const res = await managementRequest(
          h.vhost.management,
          'GET',
          `/queues/${encodeURIComponent(h.vhost.vhost)}/${encodeURIComponent(`${WORK}.dlq`)}`,
        );
        const q = (await res.json()) as { messages?: number };
        return res.ok && q.messages === 0;
      },
      30_000,
    );
  });
});

describe('an insert the database refuses', () => {
  /** Publishes one dead letter of WORK straight to its DLQ, with the given extra headers. */
  async function sendDeadLetter(id: string, headers: Record<string, unknown>) {
    const conn = await amqplib.connect(h.vhost.url);
    try {
      const ch = await conn.createConfirmChannel();
      ch.sendToQueue(`${WORK}.dlq`, Buffer.from(JSON.stringify({ id, type: 'order.placed' })), {
        messageId: id,
        persistent: true,
        headers: {
          'x-error-class': 'PermanentError',
          'x-error-message': `refused ${id}`,
          'x-original-queue': WORK,
          'x-dead-lettered-at': new Date().toISOString(),
          ...headers,
        },
      });
      await ch.waitForConfirms();
    } finally {
      await conn.close();
    }
  }

  // A trigger stands in for the database's refusals, by SQLSTATE: 40001 (serialization failure,
  // about the moment) on the first try of a marked copy, 22023 (a data exception, about the copy)
  // at every try of a copy that still carries its marked header.
  beforeAll(async () => {
    await h.pool.query(`
      CREATE SEQUENCE test_transient_tries;
      CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.headers ? 'x-test-transient' AND nextval('test_transient_tries') = 1 THEN
          RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001';
        END IF;
        IF NEW.headers ? 'x-test-refused' THEN
          RAISE EXCEPTION 'value refused' USING ERRCODE = '22023';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_refuse BEFORE INSERT ON dlq_messages FOR EACH ROW EXECUTE FUNCTION test_refuse();
    `);
  });
  afterAll(async () => {
    await h.pool.query(
      `DROP TRIGGER test_refuse ON dlq_messages; DROP FUNCTION test_refuse(); DROP SEQUENCE test_transient_tries`,
    );
  });

  it('for the moment (by SQLSTATE): the copy stays in its DLQ and is stored, whole, at a later try', async () => {
    const id = orderId();
    await sendDeadLetter(id, { 'x-test-transient': 'yes' });
    const row = await eventually(
      'stored after the retry',
      async () => (await h.pool.query(`SELECT * FROM dlq_messages WHERE message_id = $1`, [id])).rows[0],
      30_000,
    );
    expect(row.headers).toMatchObject({ 'x-test-transient': 'yes', 'x-error-message': `refused ${id}` });
    expect((await h.pool.query(`SELECT last_value::int AS n FROM test_transient_tries`)).rows[0].n).toBe(2);
  });

  it('for what it holds: stored at once without its headers, the refusal in their place, and acked', async () => {
    const id = orderId();
    await sendDeadLetter(id, { 'x-test-refused': 'yes' });
    const row = await eventually(
      'stored',
      async () => (await h.pool.query(`SELECT * FROM dlq_messages WHERE message_id = $1`, [id])).rows[0],
      30_000,
    );
    expect(row).toMatchObject({
      error_message: `refused ${id}`,
      original_queue: WORK,
      headers: { 'x-dlq-unstorable': '22023: value refused' },
      properties: {},
    });
    await eventually(
      'the DLQ empty',
      async () => {
        const res = await managementRequest(
          h.vhost.management,
          'GET',
          `/queues/${encodeURIComponent(h.vhost.vhost)}/${encodeURIComponent(`${WORK}.dlq`)}`,
        );
        return res.ok && ((await res.json()) as { messages?: number }).messages === 0;
      },
      30_000,
    );
  });
});
