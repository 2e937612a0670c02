import {
  commentOnPostKey,
  compositeKey,
  followKey,
  mentionKey,
  reactionKey,
  replyKey,
  securityAlertKey,
} from './idempotency-keys';

describe('idempotency keys', () => {
  it('follow the contract formats', () => {
    expect(mentionKey('c1', 'u1')).toBe('mention:c1:u1');
    expect(replyKey('c2', 'u3')).toBe('reply:c2:u3');
    expect(commentOnPostKey('c2', 'u1')).toBe('comment:c2:u1');
    expect(followKey('u2', 'u1')).toBe('follow:u2:u1');
    expect(reactionKey('r1')).toBe('reaction:r1');
    expect(securityAlertKey('a1')).toBe('security:a1');
  });

  it('keep uuids verbatim', () => {
    const id = '6f1c2a4e-8b7d-4c3e-9a51-2d0b9e7f4a10';
    expect(mentionKey(id, id)).toBe(`mention:${id}:${id}`);
  });

  it('stay unambiguous when ids contain the separator', () => {
    expect(mentionKey('a:b', 'c')).not.toBe(mentionKey('a', 'b:c'));
    expect(mentionKey('a:b', 'c')).toBe('mention:a%3Ab:c');
    expect(followKey('a%3Ab', 'c')).not.toBe(followKey('a:b', 'c'));
  });

  it('are built by compositeKey, which keeps the parts in order and escapes each one', () => {
    expect(compositeKey('thread', { commentId: 'c1', userId: 'u1' })).toBe('thread:c1:u1');
    expect(compositeKey('thread', { commentId: 'a:b%c', userId: 'u:1' })).toBe('thread:a%3Ab%25c:u%3A1');
    expect(() => compositeKey('thread', { commentId: 'c1', userId: '' })).toThrow(/userId/);
  });

  it('refuse empty ids', () => {
    expect(() => reactionKey('')).toThrow(/reactionId/);
    expect(() => followKey('u1', '')).toThrow(/followeeId/);
  });
});
