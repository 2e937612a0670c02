import { buildEvent } from './build';
import { onePerSlot, planNotifications, threadSlot } from './notification-rules';

const ev = <T extends Parameters<typeof buildEvent>[0]>(type: T, data: Parameters<typeof buildEvent<T>>[1]) =>
  buildEvent(type, data, { producer: 'test' });

describe('planNotifications', () => {
  it('a reply notifies the parent author, a comment the post author, with the contract keys', () => {
    const plans = planNotifications(
      ev('comment.created', {
        commentId: 'c2',
        postId: 'p',
        postAuthorId: 'P',
        authorId: 'A',
        parentCommentId: 'c1',
        parentAuthorId: 'R',
        excerpt: 'x',
      }),
    );
    expect(plans?.map((p) => [p.userId, p.type, p.idempotencyKey, p.slotKey])).toEqual([
      ['R', 'reply', 'reply:c2:R', 'thread:c2:R'],
      ['P', 'comment', 'comment:c2:P', 'thread:c2:P'],
    ]);
  });

  it('a reply to the post author is one reply, not a reply and a comment', () => {
    const plans = planNotifications(
      ev('comment.created', {
        commentId: 'c2',
        postId: 'p',
        postAuthorId: 'P',
        authorId: 'A',
        parentCommentId: 'c1',
        parentAuthorId: 'P',
        excerpt: 'x',
      }),
    );
    expect(plans?.map((p) => p.type)).toEqual(['reply']);
  });

  it('a parentAuthorId without parentCommentId is not a reply', () => {
    const plans = planNotifications(
      ev('comment.created', {
        commentId: 'c2',
        postId: 'p',
        postAuthorId: 'P',
        authorId: 'A',
        parentAuthorId: 'R',
        excerpt: 'x',
      }),
    );
    expect(plans?.map((p) => p.type)).toEqual(['comment']);
  });

  it('plans nothing for self-actions', () => {
    expect(
      planNotifications(
        ev('user.mentioned', { commentId: 'c', postId: 'p', actorId: 'A', mentionedUserId: 'A', excerpt: '' }),
      ),
    ).toEqual([]);
    expect(
      planNotifications(
        ev('reaction.added', {
          reactionId: 'r',
          actorId: 'A',
          targetType: 'post',
          targetId: 'p',
          targetAuthorId: 'A',
          emoji: '+1',
        }),
      ),
    ).toEqual([]);
    expect(planNotifications(ev('user.followed', { followerId: 'A', followeeId: 'A' }))).toEqual([]);
  });

  it('a security alert has no actor and a bounded excerpt', () => {
    const [p] =
      planNotifications(ev('security.alert', { alertId: 'a', userId: 'U', kind: 'login', detail: 'x'.repeat(2000) })) ??
      [];
    expect(p).toMatchObject({ userId: 'U', type: 'security_alert', idempotencyKey: 'security:a' });
    expect(p.actorId).toBeUndefined();
    expect(p.excerpt).toHaveLength(500);
  });

  it('returns undefined for events that never notify', () => {
    expect(
      planNotifications(ev('post.published', { postId: 'p', authorId: 'a', title: 't', excerpt: 'e' })),
    ).toBeUndefined();
  });

  it('thread slots cannot collide through ids containing ":"', () => {
    expect(threadSlot('a:b', 'c')).not.toBe(threadSlot('a', 'b:c'));
  });
});

describe('onePerSlot', () => {
  it('keeps the highest rank per slot, the first on a tie', () => {
    const kept = onePerSlot([
      { slotKey: 's', slotRank: 2, n: 1 },
      { slotKey: 's', slotRank: 3, n: 2 },
      { slotKey: 's', slotRank: 3, n: 3 },
      { slotKey: 't', slotRank: 0, n: 4 },
    ]);
    expect(kept.map((k) => k.n)).toEqual([2, 4]);
  });
});
