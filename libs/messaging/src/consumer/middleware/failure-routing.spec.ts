import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { PermanentError, TransientError, type ErrorClassifier } from '../../errors';
import { runtimeMetrics } from '../../metrics';
import { testDelivery } from '../test-delivery';
import { failureRouting } from './failure-routing';

// The backoff between unroutable copies is a sleep from node:timers/promises (which jest's fake
// timers do not replace): spied on, so a test can read the delay asked for instead of timing it.
jest.mock('node:timers/promises', () => {
  const actual = jest.requireActual<typeof import('node:timers/promises')>('node:timers/promises');
  return { ...actual, setTimeout: jest.fn(actual.setTimeout) };
});

/** Lets pending callbacks (the fake channel confirms on setImmediate) run until `done` holds. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; !done(); i++) {
    if (i > 10_000) throw new Error('condition never held');
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

describe('failureRouting', () => {
  const options = (classifiers: ErrorClassifier[] = []) => ({
    queue: 'q',
    handler: 'h',
    retryDelaysMs: [1000, 5000],
    classifiers,
    metrics: runtimeMetrics(new Registry()),
  });
  const failing = (err: unknown) => async () => Promise.reject(err);

  it('passes a success through untouched and publishes nothing', async () => {
    const { delivery, published } = testDelivery();
    await expect(failureRouting(options())(async () => 'processed')(undefined, delivery.ctx)).resolves.toBe(
      'processed',
    );
    expect(published).toEqual([]);
  });

  it('copies a transient failure to the retry tier of its attempt, through its queue’s own exchange (never the default one), with its history', async () => {
    const { delivery, published } = testDelivery({ headers: { 'x-retry-attempt': 1 } });
    await expect(
      failureRouting(options())(failing(new TransientError('busy')))(undefined, delivery.ctx),
    ).resolves.toBeUndefined();
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({
      exchange: 'q.direct',
      routingKey: 'q.retry.5s',
      options: { persistent: true, messageId: 'e-1', type: 'user.mentioned' },
    });
    expect(published[0].options.headers).toMatchObject({
      'x-retry-attempt': 2,
      'x-last-error-class': 'TransientError',
      'x-last-error-message': 'busy',
    });
    expect(published[0].options.headers).not.toHaveProperty('x-error-kind');
  });

  it('dead-letters a permanent failure at once, with the reason headers', async () => {
    const { delivery, published } = testDelivery();
    await failureRouting(options())(failing(new PermanentError('no such comment')))(undefined, delivery.ctx);
    expect(published[0].routingKey).toBe('q.dlq');
    expect(published[0].options.headers).toMatchObject({
      'x-error-class': 'PermanentError',
      'x-error-message': 'no such comment',
      'x-error-kind': 'permanent',
      'x-attempts': 1,
      'x-original-queue': 'q',
      'x-handler': 'h',
    });
  });

  it('dead-letters a transient failure past the last tier as retries-exhausted', async () => {
    const { delivery, published } = testDelivery({ headers: { 'x-retry-attempt': 2 } });
    await failureRouting(options())(failing(new TransientError('still busy')))(undefined, delivery.ctx);
    expect(published[0]).toMatchObject({
      routingKey: 'q.dlq',
      options: { headers: expect.objectContaining({ 'x-error-kind': 'retries-exhausted', 'x-attempts': 3 }) },
    });
  });

  it('asks the registered classifiers', async () => {
    const { delivery, published } = testDelivery();
    const refused: ErrorClassifier = (err) => ((err as { code?: string }).code === 'REFUSED' ? 'permanent' : undefined);
    await failureRouting(options([refused]))(failing(Object.assign(new Error('refused'), { code: 'REFUSED' })))(
      undefined,
      delivery.ctx,
    );
    expect(published[0].routingKey).toBe('q.dlq');
  });

  it('rejects when the copy cannot be published, so the consumer returns the original instead of acking it', async () => {
    const { delivery } = testDelivery({ publishFails: true });
    await expect(
      failureRouting(options())(failing(new TransientError('busy')))(undefined, delivery.ctx),
    ).rejects.toThrow('channel closed');
  });

  it('publishes copies as mandatory and keeps retrying an unroutable one instead of resolving (the original is not acked)', async () => {
    const metrics = runtimeMetrics(new Registry());
    const { delivery, published, logLines } = testDelivery({ unroutable: 1 });
    const backoff = jest.mocked(sleep).mockImplementationOnce(async () => undefined);
    await expect(
      failureRouting({ ...options(), metrics })(failing(new TransientError('busy')))(undefined, delivery.ctx),
    ).resolves.toBeUndefined();
    expect(published.map((p) => [p.routingKey, p.options.mandatory])).toEqual([
      ['q.retry.1s', true],
      ['q.retry.1s', true],
    ]);
    // Before the second copy it waited the delay it computed and logged: equal jitter on a 1 s base.
    const unroutable = logLines.filter((l) => String(l.msg).includes('unroutable') && l.target === 'q.retry.1s');
    expect(unroutable).toHaveLength(1);
    const retryInMs = unroutable[0].retryInMs as number;
    expect(retryInMs).toBeGreaterThanOrEqual(500);
    expect(retryInMs).toBeLessThanOrEqual(1000);
    expect(backoff).toHaveBeenCalledTimes(1);
    expect(backoff).toHaveBeenCalledWith(retryInMs, undefined, { signal: delivery.ctx.signal });
    expect((await metrics.unroutableCopies.get()).values).toEqual([
      expect.objectContaining({ labels: { queue: 'q', destination: 'retry' }, value: 1 }),
    ]);
  });

  it('gives up on an unroutable copy at a forced shutdown, so the original goes back to the broker', async () => {
    const { delivery, shutdown, published, logLines } = testDelivery({ unroutable: 100 });
    const routed = failureRouting(options())(failing(new PermanentError('bad')))(undefined, delivery.ctx);
    const outcome = routed.catch((err: unknown) => err);
    // The shutdown lands while it waits to publish the copy again.
    await until(() => logLines.some((l) => String(l.msg).includes('unroutable')));
    shutdown.abort();
    expect(await outcome).toMatchObject({ message: expect.stringMatching(/unroutable/) });
    expect(published).toHaveLength(1);
  });

  it('routes nothing for a message already returned to the broker', async () => {
    const { delivery, published } = testDelivery();
    delivery.settled = true;
    const err = new TransientError('busy');
    await expect(failureRouting(options())(failing(err))(undefined, delivery.ctx)).rejects.toBe(err);
    expect(published).toEqual([]);
  });
});
