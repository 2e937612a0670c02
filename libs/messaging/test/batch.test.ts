import { Pool } from 'pg';
import { Registry } from 'prom-client';
import {
  createMessaging,
  PermanentError,
  TransientError,
  type BatchItem,
  type Messaging,
  type Middleware,
} from '../src';
import { createTestVhost, eventually, type TestVhost } from './support/broker';
import { mention, testLogger, testTopology, validateTestEvent, type TestEvent } from './support/events';
import { createScratchDatabase } from './support/postgres';

/**
 * Batch mode against a real Postgres: one transaction per batch, an ack only after the commit,
 * and a failing item retried or dead-lettered alone.
 */
let vhost: TestVhost;
let db: Awaited<ReturnType<typeof createScratchDatabase>>;
let pool: Pool;
let messaging: Messaging;
const calls: string[][] = [];

/** Instructions travel in the excerpt: "ok", "flaky" (fails its first attempt), "poison", "rollback-once". */
const flakyFailed = new Set<string>();
/** What an app's middleware saw of each message's passage: its own outcome, after its batch committed. */
const passages: Array<{ id: string; result: string }> = [];
const recordPassage: Middleware<TestEvent> = (next) => async (event, ctx) => {
  try {
    const outcome = await next(event, ctx);
    passages.push({ id: event.id, result: String(outcome) });
    return outcome;
  } catch (err) {
    passages.push({ id: event.id, result: (err as Error).name });
    throw err;
  }
};
let rollbackDone = false;

async function handleBatch(items: BatchItem<TestEvent>[]): Promise<Array<Error | 'processed'>> {
  calls.push(items.map((i) => i.event.id));
  const results: Array<Error | 'processed'> = items.map((i) => {
    const excerpt = i.event.data.excerpt;
    if (excerpt === 'poison') return new PermanentError('poison');
    if (excerpt === 'flaky' && !flakyFailed.has(i.event.id)) {
      flakyFailed.add(i.event.id);
      return new TransientError('flaky');
    }
    return 'processed';
  });
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const ids = items.filter((_, n) => results[n] === 'processed').map((i) => i.event.id);
    await client.query('INSERT INTO effects (event_id) SELECT unnest($1::text[])', [ids]);
    if (items.some((i) => i.event.data.excerpt === 'rollback-once') && !rollbackDone) {
      rollbackDone = true;
      // e.g. a serialization failure at commit: nothing of this batch is committed
      throw Object.assign(new Error('could not serialize access'), { code: '40001' });
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
  return results;
}

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('batch'), createScratchDatabase('batch')]);
  pool = new Pool({ connectionString: db.url, max: 4 });
  // No unique constraint on purpose: a second effect of the same event would show as a duplicate row.
  await pool.query('CREATE TABLE effects (event_id text NOT NULL, at timestamptz NOT NULL DEFAULT now())');
  messaging = createMessaging({
    url: vhost.url,
    service: 'batch-test',
    topology: testTopology([{ name: 'test.batch', retryDelaysMs: [200, 400] }]),
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
  });
  messaging.consume({
    queue: 'test.batch',
    name: 'batch-writer',
    validate: validateTestEvent,
    middleware: [recordPassage],
    batch: { size: 25, maxWaitMs: 50, handle: handleBatch },
  });
  await messaging.start();
});

afterAll(async () => {
  await messaging.stop(2000);
  await pool.end();
  await Promise.all([db.drop(), vhost.delete()]);
});

async function effects(): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ event_id: string; n: string }>(
    'SELECT event_id, count(*) AS n FROM effects GROUP BY event_id',
  );
  return new Map(rows.map((r) => [r.event_id, Number(r.n)]));
}

it('acks committed items once, retries only the failing ones, dead-letters the poison', async () => {
  const ok = Array.from({ length: 60 }, () => mention('ok'));
  const flaky = [mention('flaky'), mention('flaky')];
  const poison = mention('poison');
  for (const e of [...ok.slice(0, 30), ...flaky, poison, ...ok.slice(30)])
    await messaging.publisher.publish(e, { routingKey: 'test.batch' });

  await eventually('all good items committed', async () => (await effects()).size === 62);
  const [dead] = await eventually('poison in the DLQ', async () => {
    const got = await vhost.take('test.batch.dlq', 5);
    return got.length ? got : undefined;
  });
  expect(dead.properties.message_id).toBe(poison.id);
  expect(dead.properties.headers).toMatchObject({ 'x-error-class': 'PermanentError', 'x-attempts': 1 });

  const rows = await effects();
  expect([...rows.values()].every((n) => n === 1)).toBe(true); // each effect exactly once
  const seen = calls.flat();
  for (const e of ok) expect(seen.filter((id) => id === e.id)).toHaveLength(1); // committed: never redelivered
  for (const e of flaky) expect(seen.filter((id) => id === e.id)).toHaveLength(2); // failed alone, retried once
  expect(Math.max(...calls.map((c) => c.length))).toBeGreaterThan(1); // it really batched
  // An app's middleware wraps each message in batch mode too, and sees that message's own result.
  const resultsOf = (id: string) => passages.filter((p) => p.id === id).map((p) => p.result);
  for (const e of ok) expect(resultsOf(e.id)).toEqual(['processed']);
  for (const e of flaky) expect(resultsOf(e.id)).toEqual(['TransientError', 'processed']);
  expect(resultsOf(poison.id)).toEqual(['PermanentError']);
  await eventually('queue empty', async () => (await vhost.depth('test.batch')).total === 0);
});

it('acks nothing of a batch whose transaction rolled back, and retries all of it', async () => {
  calls.length = 0;
  const batch = [mention('ok'), mention('rollback-once'), mention('ok')];
  const before = (await effects()).size;
  await Promise.all(batch.map((e) => messaging.publisher.publish(e, { routingKey: 'test.batch' })));
  await eventually('retried batch committed', async () => (await effects()).size === before + 3);
  const rows = await effects();
  for (const e of batch) expect(rows.get(e.id)).toBe(1);
  const seen = calls.flat();
  for (const e of batch) expect(seen.filter((id) => id === e.id)).toHaveLength(2);
});
