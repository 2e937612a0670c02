import type { EventData, EventType } from './events';

/** One valid `data` sample per event type, and the required fields the contract lists for it. */
export const SAMPLES: { [T in EventType]: { data: EventData<T>; required: readonly string[] } } = {
  'user.upserted': {
    data: { userId: 'u1', email: 'ana@example.com', displayName: 'Ana', locale: 'id-ID' },
    required: ['userId', 'email', 'displayName'],
  },
  'user.mentioned': {
    data: { commentId: 'c1', postId: 'p1', actorId: 'u2', mentionedUserId: 'u1', excerpt: 'hai @ana' },
    required: ['commentId', 'postId', 'actorId', 'mentionedUserId', 'excerpt'],
  },
  'comment.created': {
    data: {
      commentId: 'c2',
      postId: 'p1',
      postAuthorId: 'u1',
      authorId: 'u2',
      parentCommentId: 'c1',
      parentAuthorId: 'u3',
      excerpt: 'setuju',
    },
    required: ['commentId', 'postId', 'postAuthorId', 'authorId', 'excerpt'],
  },
  'reaction.added': {
    data: { reactionId: 'r1', actorId: 'u2', targetType: 'comment', targetId: 'c1', targetAuthorId: 'u1', emoji: '👍' },
    required: ['reactionId', 'actorId', 'targetType', 'targetId', 'targetAuthorId', 'emoji'],
  },
  'user.followed': { data: { followerId: 'u2', followeeId: 'u1' }, required: ['followerId', 'followeeId'] },
  'user.unfollowed': { data: { followerId: 'u2', followeeId: 'u1' }, required: ['followerId', 'followeeId'] },
  'post.published': {
    data: { postId: 'p1', authorId: 'u1', title: 'Kerja bakti', excerpt: 'Minggu pagi' },
    required: ['postId', 'authorId', 'title', 'excerpt'],
  },
  'security.alert': {
    data: { alertId: 'a1', userId: 'u1', kind: 'new_login', detail: 'Login from a new device' },
    required: ['alertId', 'userId', 'kind', 'detail'],
  },
  'notification.created': {
    data: {
      notificationId: 'n1',
      userId: 'u1',
      type: 'mention',
      idempotencyKey: 'mention:c1:u1',
      actorId: 'u2',
      resourceType: 'comment',
      resourceId: 'c1',
      emailChannel: 'immediate',
      excerpt: 'hai @ana',
    },
    required: ['notificationId', 'userId', 'type', 'idempotencyKey', 'resourceType', 'resourceId', 'emailChannel'],
  },
  'user.erased': {
    data: { userId: 'u1', erasureId: '42', cause: 'account_deleted' },
    required: ['userId', 'erasureId'],
  },
  'comment.deleted': {
    data: { commentId: 'c1', postId: 'p1', authorId: 'u2' },
    required: ['commentId', 'postId', 'authorId'],
  },
  'post.deleted': { data: { postId: 'p1', authorId: 'u1' }, required: ['postId', 'authorId'] },
  'reaction.removed': {
    data: { reactionId: 'r1', actorId: 'u2', targetType: 'comment', targetId: 'c1' },
    required: ['reactionId', 'actorId', 'targetType', 'targetId'],
  },
  'user.deleted': { data: { userId: 'u1' }, required: ['userId'] },
  'notification.withdrawn': {
    data: {
      notificationId: 'n1',
      userId: 'u1',
      type: 'mention',
      idempotencyKey: 'mention:c1:u1',
      subject: 'comment:c1',
    },
    required: ['notificationId', 'userId', 'type', 'idempotencyKey', 'subject'],
  },
};

export function envelope(
  type: string,
  data: unknown,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id: '6f1c2a4e-8b7d-4c3e-9a51-2d0b9e7f4a10',
    type,
    version: 1,
    occurredAt: '2026-11-29T10:00:00.000Z',
    producer: 'community-api',
    correlationId: 'corr-1',
    data,
    ...overrides,
  };
}

export function omit(object: object, ...keys: string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([key]) => !keys.includes(key)));
}
