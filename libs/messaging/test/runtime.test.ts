import { setTimeout as sleep } from 'node:timers/promises';
import { connect as amqpConnect } from 'amqplib';
import { Pool, type PoolClient } from 'pg';
import { Registry } from 'prom-client';
import {
  createMessaging,
  HandlerTimeoutError,
  PermanentError,
  TopologyDriftError,
  TransientError,
  UnroutableError,
  type MessageContext,
  type Messaging,
} from '../src';
import { DELIVERY, type RuntimeContext } from '../src/consumer/delivery';
import { createTestVhost, eventually, type PeekedMessage, type TestVhost } from './support/broker';
import { createScratchDatabase } from './support/postgres';
import { mention, testLogger, testTopology, validateTestEvent, type TestEvent } from './support/events';

const topology = testTopology([
  { name: 'test.idle' },
  { name: 'test.transient' },
  { name: 'test.permanent' },
  { name: 'test.malformed' },
  { name: 'test.timeout' },
  { name: 'test.concurrency' },
]);

let vhost: TestVhost;
let messaging: Messaging;
let db: Awaited<ReturnType<typeof createScratchDatabase>>;
let pool: Pool;
const started: Messaging[] = [];

function newMessaging(t = topology): Messaging {
  const m = createMessaging({
    url: vhost.url,
    service: 'runtime-test',
    topology: t,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
  });
  started.push(m);
  return m;
}

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('runtime'), createScratchDatabase('runtime')]);
  pool = new Pool({ connectionString: db.url, max: 4 });
  pool.on('error', () => undefined); // idle clients see the drop in afterAll end their backends
  await pool.query('CREATE TABLE effects (event_id text NOT NULL, attempt int NOT NULL)');
  messaging = newMessaging();
});

afterAll(async () => {
  await Promise.all(started.map((m) => m.stop(2000)));
  // The drop ends every backend first (FORCE): a first run the deadline failed to stop would
  // otherwise hold its connection, and pool.end(), for the ten minutes of its statement.
  await Promise.all([vhost.delete(), db.drop()]);
  await pool.end();
});

/**
 * A transaction bound to an AbortSignal, as the apps bind theirs to ctx.signal (libs/db's
 * withTransaction, which this lib may not import): on abort its backend is ended, so the statement
 * running stops and Postgres rolls the transaction back. Ending the backend rather than cancelling
 * the statement also stops it when the abort lands between two statements.
 */
async function inTransactionUntilAborted(signal: AbortSignal, work: (tx: PoolClient) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  client.on('error', () => undefined); // the ended backend reports itself here too
  const end = () =>
    void pool
      .query('SELECT pg_terminate_backend($1)', [(client as PoolClient & { processID: number }).processID])
      .catch(() => undefined);
  signal.addEventListener('abort', end, { once: true });
  if (signal.aborted) end();
  try {
    await client.query('BEGIN');
    await work(client);
    await client.query('COMMIT');
  } finally {
    signal.removeEventListener('abort', end);
    client.release(true);
  }
}

describe('topology setup', () => {
  it('declaring the same topology twice is a no-op: the broker holds exactly the planned queues, with their policies', async () => {
    await messaging.start();
    const second = newMessaging();
    await second.start(); // same declarations again: no PRECONDITION_FAILED
    const queues = await vhost.queues();
    expect(queues.map((q) => q.name).sort()).toEqual(messaging.plan.queues.map((q) => q.name).sort());
    expect(queues.every((q) => q.type === 'quorum')).toBe(true);
    const policies = (await (
      await fetch(`${vhost.management.baseUrl}/api/policies/${encodeURIComponent(vhost.vhost)}`, {
        headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
      })
    ).json()) as Array<{ name: string; definition: Record<string, unknown> }>;
    expect(policies.find((p) => p.name === 'messaging:test.transient')?.definition).toMatchObject({
      'delivery-limit': 3,
      'dead-letter-exchange': 'dlx',
      overflow: 'drop-head',
    });
  });

  it('refuses to start when a queue exists with drifted arguments, naming the queue and the argument', async () => {
    // test.idle exists (declared above) without single-active-consumer; this runtime wants it with.
    const drifted = newMessaging(testTopology([{ name: 'test.idle', singleActiveConsumer: true }]));
    const failure = await drifted.start().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(TopologyDriftError);
    expect(failure).toMatchObject({ kind: 'queue', entity: 'test.idle' });
    expect((failure as Error).message).toMatch(/queue "test\.idle" exists on the broker with other arguments/);
    expect((failure as Error).message).toContain('x-single-active-consumer');
    // The broker kept the original queue as it was.
    expect((await vhost.queues()).find((q) => q.name === 'test.idle')?.arguments).not.toHaveProperty(
      'x-single-active-consumer',
    );
  });
});

describe('publisher', () => {
  it('resolves once the broker confirmed, with the contract properties', async () => {
    const event = mention('confirmed');
    await messaging.publisher.publish(event, { routingKey: 'test.idle' });
    const [msg] = await eventually('message in test.idle', async () => {
      const got = await vhost.take('test.idle', 1);
      return got.length ? got : undefined;
    });
    expect(JSON.parse(msg.body)).toEqual(event);
    expect(msg.properties).toMatchObject({
      message_id: event.id,
      type: 'user.mentioned',
      correlation_id: event.correlationId,
    });
    expect(msg.properties.headers).toMatchObject({ 'x-schema-version': 1 });
  });

  it('rejects an unroutable publish instead of dropping it', async () => {
    await expect(messaging.publisher.publish(mention(), { routingKey: 'nobody.listens' })).rejects.toBeInstanceOf(
      UnroutableError,
    );
  });
});

describe('consumer failures', () => {
  it('walks a transient failure through every retry tier, with the delays, into the DLQ with every header', async () => {
    // What each attempt's delivery says about the delay before it: the broker's x-death entry names
    // the retry queue the copy waited in and why it left it ('expired': its TTL ran out).
    const attempts: Array<{ attempt: number; death: unknown }> = [];
    messaging.consume({
      queue: 'test.transient',
      name: 'always-busy',
      validate: validateTestEvent,
      handle: async (_e: TestEvent, ctx: MessageContext) => {
        // A handler never sees the raw delivery; this test reads it through the runtime's own key.
        const headers = (ctx as RuntimeContext)[DELIVERY].msg.properties.headers ?? {};
        attempts.push({ attempt: ctx.attempt, death: headers['x-death'] });
        throw new TransientError('downstream busy');
      },
    });
    const event = mention('transient');
    await messaging.publisher.publish(event, { routingKey: 'test.transient' });
    const [dead] = await eventually('message in test.transient.dlq', async () => {
      const got = await vhost.take('test.transient.dlq', 1);
      return got.length ? got : undefined;
    });
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    // The backoff is the broker's: attempt 2 came back from the 300 ms tier, attempt 3 from the
    // 600 ms one, each after its TTL expired there, and each tier queue holds exactly that TTL.
    expect(attempts[0].death).toBeUndefined();
    expect(attempts[1].death).toEqual([
      expect.objectContaining({ queue: 'test.transient.retry.300ms', reason: 'expired', count: 1 }),
    ]);
    expect(attempts[2].death).toEqual([
      expect.objectContaining({ queue: 'test.transient.retry.600ms', reason: 'expired', count: 1 }),
    ]);
    const tiers = Object.fromEntries((await vhost.queues()).map((q) => [q.name, q.arguments]));
    expect(tiers['test.transient.retry.300ms']).toMatchObject({
      'x-message-ttl': 300,
      'x-dead-letter-routing-key': 'test.transient',
    });
    expect(tiers['test.transient.retry.600ms']).toMatchObject({
      'x-message-ttl': 600,
      'x-dead-letter-routing-key': 'test.transient',
    });
    expect(JSON.parse(dead.body)).toEqual(event);
    expect(dead.properties.message_id).toBe(event.id);
    expect(dead.properties.headers).toMatchObject({
      'x-error-class': 'TransientError',
      'x-error-message': 'downstream busy',
      'x-error-kind': 'retries-exhausted',
      'x-attempts': 3,
      'x-original-queue': 'test.transient',
      'x-original-routing-key': 'test.transient',
      'x-handler': 'always-busy',
    });
    const h = dead.properties.headers!;
    expect(Date.parse(String(h['x-first-failure-at']))).toBeLessThanOrEqual(
      Date.parse(String(h['x-dead-lettered-at'])),
    );
    expect(await vhost.depth('test.transient')).toEqual({ ready: 0, unacked: 0, total: 0 });
  });

  it('sends a permanent failure straight to the DLQ', async () => {
    let calls = 0;
    messaging.consume({
      queue: 'test.permanent',
      name: 'refuses',
      validate: validateTestEvent,
      handle: async () => {
        calls += 1;
        throw new PermanentError('comment c-9 does not exist', 'MISSING_REFERENCE');
      },
    });
    await messaging.publisher.publish(mention('permanent'), { routingKey: 'test.permanent' });
    const [dead] = await eventually('message in test.permanent.dlq', async () => {
      const got = await vhost.take('test.permanent.dlq', 1);
      return got.length ? got : undefined;
    });
    expect(calls).toBe(1);
    expect(dead.properties.headers).toMatchObject({
      'x-error-class': 'PermanentError',
      'x-error-kind': 'permanent',
      'x-attempts': 1,
    });
    expect(await vhost.depth('test.permanent.retry.300ms')).toMatchObject({ total: 0 });
  });

  it('dead-letters malformed and invalid bodies with the validator’s reason, and keeps serving', async () => {
    const handled: string[] = [];
    messaging.consume({
      queue: 'test.malformed',
      name: 'records',
      validate: validateTestEvent,
      handle: async (e: TestEvent) => void handled.push(e.id),
    });
    const raw = await amqpConnect(vhost.url);
    const ch = await raw.createConfirmChannel();
    ch.publish('test.events', 'test.malformed', Buffer.from('{not json'), { messageId: 'bad-1', persistent: true });
    const missingField = { ...mention(), data: { excerpt: 'x' } };
    ch.publish('test.events', 'test.malformed', Buffer.from(JSON.stringify(missingField)), {
      messageId: 'bad-2',
      persistent: true,
    });
    await ch.waitForConfirms();
    await raw.close();
    const good = mention('after the bad ones');
    await messaging.publisher.publish(good, { routingKey: 'test.malformed' });

    // `take` removes what it returns: keep what each poll got, the two may arrive a poll apart.
    const dead: PeekedMessage[] = [];
    await eventually('two messages in test.malformed.dlq', async () => {
      dead.push(...(await vhost.take('test.malformed.dlq', 2)));
      return dead.length >= 2;
    });
    expect(dead).toHaveLength(2);
    const byId = Object.fromEntries(dead.map((d) => [d.properties.message_id, d.properties.headers]));
    expect(byId['bad-1']).toMatchObject({
      'x-error-class': 'InvalidTestEvent',
      'x-error-kind': 'permanent',
      'x-attempts': 1,
    });
    expect(byId['bad-2']).toMatchObject({
      'x-error-class': 'InvalidTestEvent',
      'x-error-message': expect.stringContaining('/data/userId'),
    });
    await eventually('the valid message handled', () => handled.includes(good.id));
    expect(handled).toEqual([good.id]);
  });

  it('stops a handler that keeps working past its deadline, and retries the message', async () => {
    // The first attempt writes a row in a transaction, then runs a statement that would go on for
    // ten minutes, then commits. Its only way out is the signal: the runtime must abort it at the
    // deadline, and the Postgres work bound to it must end without committing anything.
    const firstRun = { reason: undefined as unknown, failure: undefined as unknown, settled: false };
    const attempts: number[] = [];
    messaging.consume({
      queue: 'test.timeout',
      name: 'slow-first',
      timeoutMs: 200,
      validate: validateTestEvent,
      handle: async (e: TestEvent, ctx: MessageContext) => {
        attempts.push(ctx.attempt);
        if (ctx.attempt > 1) {
          await pool.query('INSERT INTO effects (event_id, attempt) VALUES ($1, $2)', [e.id, ctx.attempt]);
          return 'processed';
        }
        ctx.signal.addEventListener('abort', () => (firstRun.reason = ctx.signal.reason), { once: true });
        try {
          await inTransactionUntilAborted(ctx.signal, async (tx) => {
            await tx.query('INSERT INTO effects (event_id, attempt) VALUES ($1, $2)', [e.id, ctx.attempt]);
            await tx.query('SELECT pg_sleep(600)');
          });
        } catch (err) {
          firstRun.failure = err;
          throw err;
        } finally {
          firstRun.settled = true;
        }
      },
    });
    const event = mention('slow');
    await messaging.publisher.publish(event, { routingKey: 'test.timeout' });
    await eventually(
      'second attempt processed',
      async () =>
        (await pool.query('SELECT 1 FROM effects WHERE event_id = $1 AND attempt = 2', [event.id])).rowCount === 1,
    );
    // The first run ended: its ten-minute statement was stopped by the abort, not finished.
    await eventually('first attempt settled', () => firstRun.settled);
    expect(firstRun.reason).toBeInstanceOf(HandlerTimeoutError);
    expect((firstRun.reason as Error).message).toBe('handler did not finish within 200 ms');
    // Postgres ended its backend ('terminating connection…', or 'Connection terminated' when the
    // abort came before a statement was on the wire).
    expect((firstRun.failure as Error).message).toMatch(/terminat/i);
    // Nothing of the first run was committed; the retry's effect is the only one.
    const rows = await pool.query<{ attempt: number }>('SELECT attempt FROM effects WHERE event_id = $1', [event.id]);
    expect(rows.rows).toEqual([{ attempt: 2 }]);
    expect(attempts).toEqual([1, 2]);
    expect(await vhost.depth('test.timeout.dlq')).toMatchObject({ total: 0 });
  });

  it('runs at most `concurrency` handlers at once', async () => {
    // The handlers hold until the consumer has its whole prefetch (20) in hand: a runtime that ran more
    // than 3 at once would have started them by then. Counted, not timed: no handler's pace matters.
    let running = 0;
    let peak = 0;
    let done = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    messaging.consume({
      queue: 'test.concurrency',
      name: 'counts',
      prefetch: 20,
      concurrency: 3,
      validate: validateTestEvent,
      handle: async () => {
        running += 1;
        peak = Math.max(peak, running);
        await gate;
        running -= 1;
        done += 1;
      },
    });
    await Promise.all(
      Array.from({ length: 30 }, () => messaging.publisher.publish(mention(), { routingKey: 'test.concurrency' })),
    );
    await eventually(
      'the prefetch delivered',
      async () => (await vhost.depth('test.concurrency')).unacked === 20,
      30_000,
    );
    expect(running).toBe(3);
    release();
    await eventually('30 handled', () => done === 30, 30_000);
    expect(peak).toBe(3);
  });
});
