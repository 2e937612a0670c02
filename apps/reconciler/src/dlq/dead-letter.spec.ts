import { DEAD_LETTER_HEADERS as H } from '@community/messaging';
import { readDeadLetter, replayHeaders } from './dead-letter';

const envelope = Buffer.from(JSON.stringify({ id: 'e1', type: 'user.mentioned', data: {} }));
const fields = {
  routingKey: 'notification-service.critical',
  exchange: '',
  deliveryTag: 1,
  redelivered: false,
  consumerTag: 'c',
};
const props = (over: Record<string, unknown>) => ({ messageId: 'm-1', headers: {}, ...over }) as never;

describe('readDeadLetter', () => {
  it('reads a copy dead-lettered by a consumer from its headers', () => {
    const d = readDeadLetter('notification-service.critical.dlq', {
      content: envelope,
      fields,
      properties: props({
        type: 'user.mentioned',
        headers: {
          [H.errorClass]: 'PermanentError',
          [H.errorMessage]: 'user 42 not found',
          [H.errorKind]: 'permanent',
          [H.attempts]: 1,
          [H.originalQueue]: 'notification-service.critical',
          [H.handler]: 'notification-batch',
          [H.deadLetteredAt]: '2026-12-01T10:00:00.000Z',
          [H.originalRoutingKey]: 'user.mentioned',
          traceparent: '00-abc-def-01',
        },
      }),
    });
    expect(d).toMatchObject({
      originalQueue: 'notification-service.critical',
      messageId: 'm-1',
      errorClass: 'PermanentError',
      errorKind: 'permanent',
      handler: 'notification-batch',
      messageType: 'user.mentioned',
      attempts: 1,
      routingKey: 'user.mentioned',
      normalized: 'user <n> not found',
    });
    expect(d.deadLetteredAt.toISOString()).toBe('2026-12-01T10:00:00.000Z');
  });

  it('reads a copy dead-lettered by the broker (delivery limit) from x-death', () => {
    const d = readDeadLetter('email-service.send.dlq', {
      content: envelope,
      fields,
      properties: props({
        headers: {
          'x-death': [
            {
              queue: 'email-service.send',
              reason: 'delivery_limit',
              count: 1,
              time: 1764583200,
              'routing-keys': ['email-service.send'],
            },
          ],
        },
      }),
    });
    expect(d).toMatchObject({
      originalQueue: 'email-service.send',
      errorClass: 'broker:delivery_limit',
      errorKind: 'delivery_limit',
      messageType: 'user.mentioned',
    });
    expect(d.deadLetteredAt.getTime()).toBe(1764583200 * 1000);
  });

  it('takes anything else without throwing, named after its DLQ, with a body-hash id', () => {
    const d = readDeadLetter('x.dlq', {
      content: Buffer.from('not json'),
      fields,
      properties: { headers: undefined } as never,
    });
    expect(d).toMatchObject({ originalQueue: 'x', errorClass: 'unknown', messageType: null });
    expect(d.messageId).toMatch(/^sha256:/);
  });

  it('makes every text storable in text and jsonb: NUL and lone surrogates become U+FFFD, numbers fit their columns', () => {
    const now = new Date('2026-12-01T10:00:00.000Z');
    const d = readDeadLetter(
      'x.dlq',
      {
        content: Buffer.from('a\u0000b'),
        fields,
        properties: props({
          type: 't\u0000',
          headers: {
            [H.errorClass]: 'E\u0000',
            [H.errorMessage]: 'bad \u0000 and \ud800',
            [H.attempts]: 1e20,
            [H.deadLetteredAt]: '-100000-01-01T00:00:00Z',
            'k\u0000': Buffer.from('v\u0000'),
            n: Infinity,
          },
        }),
      },
      now,
    );
    expect(d).toMatchObject({
      errorClass: 'E\uFFFD',
      errorMessage: 'bad \uFFFD and \uFFFD',
      messageType: 't\uFFFD',
      attempts: 2 ** 31 - 1,
      deadLetteredAt: now,
    });
    expect(d.headers).toMatchObject({ 'k\uFFFD': 'v\uFFFD', n: 'Infinity' });
    expect(JSON.stringify(d)).not.toMatch(/\\u0000|\\ud800/);
    expect(d.body.equals(Buffer.from('a\u0000b'))).toBe(true); // bytea: kept exactly
  });
});

describe('replayHeaders', () => {
  it('drops the retry history and keeps the rest', () => {
    const h = replayHeaders({ [H.retryAttempt]: 5, [H.errorClass]: 'E', 'x-death': [], traceparent: 't' }, '7', 1);
    expect(h).toEqual({
      traceparent: 't',
      'x-replay-operation': '7',
      'x-replay-count': 1,
      'x-replayed-error-class': 'E',
    });
  });
});
