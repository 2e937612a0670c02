import type { ConsumeMessage } from 'amqplib';
import { PermanentError, TransientError, type ErrorClassifier } from '../errors';
import { attemptOf, failureHeaders, routeFailure } from './failure';

describe('routeFailure', () => {
  const tiers = [1000, 5000];
  it('sends transient failures through the tiers in order, then to the DLQ', () => {
    const err = new TransientError('busy');
    expect(routeFailure('q', tiers, 1, err)).toMatchObject({ destination: 'retry', queue: 'q.retry.1s' });
    expect(routeFailure('q', tiers, 2, err)).toMatchObject({ destination: 'retry', queue: 'q.retry.5s' });
    expect(routeFailure('q', tiers, 3, err)).toMatchObject({ destination: 'dlq', queue: 'q.dlq', kind: 'transient' });
  });
  it('sends permanent failures to the DLQ on the first attempt', () => {
    expect(routeFailure('q', tiers, 1, new PermanentError('no'))).toMatchObject({
      destination: 'dlq',
      kind: 'permanent',
    });
  });
  it('goes straight to the DLQ when a queue has no tiers', () => {
    expect(routeFailure('q', [], 1, new TransientError('busy'))).toMatchObject({ destination: 'dlq' });
  });
  it('asks the registered classifiers', () => {
    const refusal: ErrorClassifier = (err) => ((err as { code?: string }).code === '23505' ? 'permanent' : undefined);
    const dup = Object.assign(new Error('duplicate key'), { code: '23505' });
    expect(routeFailure('q', tiers, 1, dup)).toMatchObject({ destination: 'retry' });
    expect(routeFailure('q', tiers, 1, dup, [refusal])).toMatchObject({ destination: 'dlq', kind: 'permanent' });
  });
});

describe('failureHeaders', () => {
  const msg = (headers: Record<string, unknown>) =>
    ({
      fields: { routingKey: 'user.mentioned', exchange: 'events' },
      properties: { headers },
    }) as unknown as ConsumeMessage;
  const now = new Date('2026-01-01T00:00:00Z');

  it('says why a message was dead-lettered, and drops the broker’s view of the previous copy', () => {
    const h = failureHeaders(
      msg({ 'x-delivery-count': 2, 'x-death': [{}], 'x-first-failure-at': 'earlier', custom: 'kept' }),
      routeFailure('q', [], 3, new PermanentError('no')),
      {
        queue: 'q',
        handler: 'h',
        attempt: 3,
        err: new PermanentError('no'),
        now,
      },
    );
    expect(h).toEqual({
      custom: 'kept',
      'x-first-failure-at': 'earlier',
      'x-original-routing-key': 'user.mentioned',
      'x-original-exchange': 'events',
      'x-retry-attempt': 3,
      'x-last-error-class': 'PermanentError',
      'x-last-error-message': 'no',
      'x-error-class': 'PermanentError',
      'x-error-message': 'no',
      'x-error-kind': 'permanent',
      'x-attempts': 3,
      'x-original-queue': 'q',
      'x-handler': 'h',
      'x-dead-lettered-at': now.toISOString(),
    });
  });

  it('counts attempts from the retry header', () => {
    expect(attemptOf(msg({}))).toBe(1);
    expect(attemptOf(msg({ 'x-retry-attempt': 2 }))).toBe(3);
  });
});
