import { EVENT_TYPES, EVENT_TYPE_NAMES, RoutingKey, isEventType, type EventType } from './events';
import { validate } from './validate';
import { SAMPLES, envelope, omit } from './test-fixtures';

const CONTRACT_TYPES = [
  'user.upserted',
  'user.mentioned',
  'comment.created',
  'reaction.added',
  'user.followed',
  'user.unfollowed',
  'post.published',
  'security.alert',
  'user.erased',
  'notification.created',
  'comment.deleted',
  'post.deleted',
  'reaction.removed',
  'user.deleted',
  'notification.withdrawn',
];

function errorOf(raw: unknown) {
  const result = validate(raw);
  if (result.ok) throw new Error('expected a validation error');
  return result.error;
}

describe('event registry', () => {
  it('holds exactly the contract event types, all version 1', () => {
    expect([...EVENT_TYPE_NAMES].sort()).toEqual([...CONTRACT_TYPES].sort());
    for (const type of EVENT_TYPE_NAMES) expect(EVENT_TYPES[type].version).toBe(1);
  });

  it('routes each type by its own name', () => {
    expect(Object.values(RoutingKey).sort()).toEqual([...CONTRACT_TYPES].sort());
    expect(RoutingKey.UserMentioned).toBe('user.mentioned');
  });

  it('does not mistake Object.prototype keys for event types', () => {
    expect(isEventType('user.mentioned')).toBe(true);
    expect(isEventType('constructor')).toBe(false);
    expect(errorOf(envelope('__proto__', {})).code).toBe('UNKNOWN_TYPE');
    expect(errorOf(envelope('toString', {})).code).toBe('UNKNOWN_TYPE');
  });
});

describe.each(CONTRACT_TYPES as EventType[])('%s v1', (type) => {
  const { data, required } = SAMPLES[type];

  it('accepts a valid sample', () => {
    const result = validate(envelope(type, data));
    expect(result).toEqual({ ok: true, event: envelope(type, data) });
  });

  it('tolerates extra data fields (forward-compatible producers)', () => {
    expect(validate(envelope(type, { ...data, addedInAMinorRelease: 42 })).ok).toBe(true);
  });

  it.each(required)('rejects a missing %s with its exact path', (field) => {
    const error = errorOf(envelope(type, omit(data, field)));
    expect(error.code).toBe('SCHEMA_VIOLATION');
    expect(error.path).toBe(`/data/${field}`);
    expect(error.reason).toBe('Expected required property');
    expect(error.message).toBe(`/data/${field}: Expected required property`);
    expect(error.permanent).toBe(true);
    expect(error.eventType).toBe(type);
  });

  it.each(required)('rejects a non-string %s', (field) => {
    const error = errorOf(envelope(type, { ...data, [field]: 7 }));
    expect(error.code).toBe('SCHEMA_VIOLATION');
    expect(error.path).toBe(`/data/${field}`);
  });

  it('accepts the sample without any of its optional fields', () => {
    const onlyRequired = Object.fromEntries(required.map((f) => [f, (data as Record<string, unknown>)[f]]));
    expect(validate(envelope(type, onlyRequired)).ok).toBe(true);
  });
});

describe('field rules', () => {
  it('rejects empty ids', () => {
    const error = errorOf(envelope('user.followed', { followerId: '', followeeId: 'u1' }));
    expect(error.path).toBe('/data/followerId');
    expect(error.reason).toMatch(/greater or equal to 1/);
  });

  it('bounds excerpts at 500 characters', () => {
    const base = SAMPLES['user.mentioned'].data;
    expect(validate(envelope('user.mentioned', { ...base, excerpt: 'x'.repeat(500) })).ok).toBe(true);
    expect(errorOf(envelope('user.mentioned', { ...base, excerpt: 'x'.repeat(501) })).path).toBe('/data/excerpt');
  });

  it('limits targetType to post or comment and names the allowed values', () => {
    const base = SAMPLES['reaction.added'].data;
    expect(validate(envelope('reaction.added', { ...base, targetType: 'post' })).ok).toBe(true);
    const error = errorOf(envelope('reaction.added', { ...base, targetType: 'user' }));
    expect(error.message).toBe("/data/targetType: Expected one of 'post', 'comment'");
  });

  it('limits emailChannel and the notification type', () => {
    const base = SAMPLES['notification.created'].data;
    expect(errorOf(envelope('notification.created', { ...base, emailChannel: 'weekly' })).path).toBe(
      '/data/emailChannel',
    );
    expect(errorOf(envelope('notification.created', { ...base, type: 'like' })).path).toBe('/data/type');
  });

  it('checks the email format of user.upserted', () => {
    const base = SAMPLES['user.upserted'].data;
    const error = errorOf(envelope('user.upserted', { ...base, email: 'not-an-email' }));
    expect(error.path).toBe('/data/email');
    expect(error.reason).toBe("Expected string to match 'email' format");
  });

  it('rejects null for an optional field (absent is the only "no value")', () => {
    const base = SAMPLES['comment.created'].data;
    expect(errorOf(envelope('comment.created', { ...base, parentCommentId: null })).path).toBe('/data/parentCommentId');
  });
});
