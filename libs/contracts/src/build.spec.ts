import { buildEvent } from './build';
import { ContractError } from './errors';
import { validate } from './validate';
import { SAMPLES } from './test-fixtures';
import type { EventType } from './events';

describe('buildEvent', () => {
  it.each(Object.keys(SAMPLES) as EventType[])('builds a %s event that validates', (type) => {
    const event = buildEvent(type, SAMPLES[type].data as never, { producer: 'community-api' });
    expect(validate(JSON.stringify(event))).toEqual({ ok: true, event });
    expect(event.type).toBe(type);
    expect(event.version).toBe(1);
  });

  it('fills id, occurredAt and correlationId by default', () => {
    const before = Date.now();
    const event = buildEvent('user.followed', { followerId: 'u2', followeeId: 'u1' }, { producer: 'community-api' });
    expect(event.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(event.correlationId).toBe(event.id);
    expect(Date.parse(event.occurredAt)).toBeGreaterThanOrEqual(before);
    expect(buildEvent('user.followed', event.data, { producer: 'x' }).id).not.toBe(event.id);
  });

  it('keeps the given id, correlationId and occurredAt', () => {
    const event = buildEvent('security.alert', SAMPLES['security.alert'].data, {
      producer: 'auth',
      id: '6f1c2a4e-8b7d-4c3e-9a51-2d0b9e7f4a10',
      correlationId: 'req-9',
      occurredAt: new Date('2026-11-29T10:00:00.000Z'),
    });
    expect(event).toMatchObject({
      id: '6f1c2a4e-8b7d-4c3e-9a51-2d0b9e7f4a10',
      correlationId: 'req-9',
      occurredAt: '2026-11-29T10:00:00.000Z',
      producer: 'auth',
    });
  });

  it('drops undefined optional fields', () => {
    const topLevel = { ...SAMPLES['comment.created'].data, parentCommentId: undefined, parentAuthorId: undefined };
    const event = buildEvent('comment.created', topLevel, { producer: 'p' });
    expect(Object.keys(event.data)).not.toContain('parentCommentId');
    expect(JSON.parse(JSON.stringify(event))).toEqual(event);
  });

  it('throws a ContractError for invalid data, at the producer', () => {
    const bad = { ...SAMPLES['user.mentioned'].data, excerpt: 'x'.repeat(501) };
    expect(() => buildEvent('user.mentioned', bad, { producer: 'p' })).toThrow(
      new ContractError('SCHEMA_VIOLATION', '/data/excerpt', 'Expected string length less or equal to 500'),
    );
    expect(() => buildEvent('user.mentioned', SAMPLES['user.mentioned'].data, { producer: 'p', id: 'x' })).toThrow(
      '/id: ',
    );
  });
});
