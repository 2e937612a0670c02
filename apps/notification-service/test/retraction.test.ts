import { randomUUID } from 'node:crypto';
import { buildEvent } from '@community/contracts';
import { eventually } from '@community/testing';
import { bearer, countersAndRecount, event, mention, startHarness, type Harness } from './harness';

/**
 * Retraction end to end (docs/NOTIFICATIONS.md "Retraction"): comment.deleted, post.deleted,
 * reaction.removed and an account deletion (user.erased with cause account_deleted) published over
 * AMQP withdraw what they name from the inbox list, the unread count and email (notification.withdrawn
 * in the outbox), in either arrival order.
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness('retraction');
});
afterAll(async () => h.close());

async function acked(): Promise<number> {
  if (!h.messaging) throw new Error('harness without AMQP');
  return (await h.messaging.metrics.succeeded.get()).values.reduce((sum, v) => sum + v.value, 0);
}

async function publishAndWait(...events: Parameters<Harness['publish']>[0][]): Promise<void> {
  const before = await acked();
  await Promise.all(events.map((e) => h.publish(e)));
  await eventually(
    `${events.length} messages acked`,
    async () => (await acked()) - before >= events.length,
    15_000,
    20,
  );
}

/** The inbox as the user sees it (HTTP). */
async function inbox(
  userId: string,
): Promise<{ items: Array<{ id: string; type: string; resourceId: string; group: { count: number } | null }> }> {
  const res = await h.app.inject({ url: `/v1/users/${userId}/notifications`, headers: bearer(h.token(userId)) });
  expect(res.statusCode).toBe(200);
  return res.json();
}

async function unread(userId: string): Promise<number> {
  const res = await h.app.inject({
    url: `/v1/users/${userId}/notifications/unread-count`,
    headers: bearer(h.token(userId)),
  });
  expect(res.statusCode).toBe(200);
  return res.json().count;
}

/**
 * What notification-service announced to a recipient, by type: notification.created as it reached
 * the broker (published after each batch's commit; one entry per notification, a re-emission is
 * the same message), notification.withdrawn from the outbox its retraction transaction writes.
 */
async function announced(userId: string, type: string): Promise<Array<{ idempotencyKey: string; subject?: string }>> {
  if (type === 'notification.created')
    return [...new Map(h.createdFor(userId).map((d) => [d.notificationId, d])).values()];
  const { rows } = await h.pool.query(
    `SELECT payload FROM outbox_messages WHERE producer = 'notification-service' AND aggregate_id = $1
        AND event_type = $2 ORDER BY id`,
    [userId, type],
  );
  return rows.map((r) => r.payload.data);
}

const uid = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

function commentCreated(
  commentId: string,
  postId: string,
  authorId: string,
  postAuthorId: string,
  parentAuthorId?: string,
) {
  return event('comment.created', {
    commentId,
    postId,
    postAuthorId,
    authorId,
    excerpt: 'nice',
    ...(parentAuthorId ? { parentCommentId: `parent-of-${commentId}`, parentAuthorId } : {}),
  });
}

it('comment.deleted withdraws the reply, the comment-on-post and the mention it caused, and nothing else', async () => {
  const [author, parent, postOwner, mentioned] = [uid('author'), uid('parent'), uid('owner'), uid('mentioned')];
  const [gone, kept] = [uid('c'), uid('c')];
  await publishAndWait(
    commentCreated(gone, 'p-1', author, postOwner, parent),
    event('user.mentioned', {
      commentId: gone,
      postId: 'p-1',
      actorId: author,
      mentionedUserId: mentioned,
      excerpt: 'hi',
    }),
    commentCreated(kept, 'p-1', author, postOwner),
  );
  // The two comments on the post are one grouped item ("… and 1 other commented on your post").
  expect((await inbox(postOwner)).items.map((i) => i.group?.count)).toEqual([2]);
  expect(await unread(parent)).toBe(1);
  expect(await unread(mentioned)).toBe(1);

  await publishAndWait(event('comment.deleted', { commentId: gone, postId: 'p-1', authorId: author }));

  expect((await inbox(parent)).items).toEqual([]);
  expect((await inbox(mentioned)).items).toEqual([]);
  // The group shrinks to the comment that is left.
  expect((await inbox(postOwner)).items.map((i) => [i.resourceId, i.group?.count])).toEqual([[kept, 1]]);
  expect([await unread(parent), await unread(mentioned), await unread(postOwner)]).toEqual([0, 0, 1]);
  // email-service is told, once per withdrawn notification, naming the business key it emailed under.
  expect(await announced(mentioned, 'notification.withdrawn')).toEqual([
    expect.objectContaining({ idempotencyKey: `mention:${gone}:${mentioned}`, subject: `comment:${gone}` }),
  ]);
  expect(await announced(postOwner, 'notification.withdrawn')).toHaveLength(1);
  // A redelivered deletion withdraws nothing more and announces nothing more.
  const again = event('comment.deleted', { commentId: gone, postId: 'p-1', authorId: author });
  await publishAndWait(again, again);
  expect(await announced(postOwner, 'notification.withdrawn')).toHaveLength(1);
  for (const row of await countersAndRecount(h.pool)) expect(row.counter).toBe(row.recount);
});

it('a deletion that arrives before its creation still wins: nothing is shown, counted or emailed', async () => {
  const [author, mentioned, postOwner] = [uid('author'), uid('mentioned'), uid('owner')];
  const commentId = uid('c');
  await publishAndWait(event('comment.deleted', { commentId, postId: 'p-2', authorId: author }));
  await publishAndWait(mention(commentId, author, mentioned), commentCreated(commentId, 'p-2', author, postOwner));
  expect((await inbox(mentioned)).items).toEqual([]);
  expect((await inbox(postOwner)).items).toEqual([]);
  expect([await unread(mentioned), await unread(postOwner)]).toEqual([0, 0]);
  expect(await announced(mentioned, 'notification.created')).toEqual([]);
  expect(await announced(postOwner, 'notification.created')).toEqual([]);
});

it('post.deleted withdraws the notifications of its comments and of reactions on it and on its comments', async () => {
  const [owner, commenter, reactor] = [uid('owner'), uid('commenter'), uid('reactor')];
  const [postId, commentId] = [uid('p'), uid('c')];
  await publishAndWait(
    commentCreated(commentId, postId, commenter, owner),
    event('reaction.added', {
      reactionId: uid('r'),
      actorId: reactor,
      targetType: 'post',
      targetId: postId,
      targetAuthorId: owner,
      emoji: '🎉',
    }),
    event('reaction.added', {
      reactionId: uid('r'),
      actorId: reactor,
      targetType: 'comment',
      targetId: commentId,
      targetAuthorId: commenter,
      emoji: '👍',
      postId,
    }),
    // On another post: stays.
    event('reaction.added', {
      reactionId: uid('r'),
      actorId: reactor,
      targetType: 'post',
      targetId: 'another-post',
      targetAuthorId: owner,
      emoji: '👀',
    }),
  );
  expect(await unread(owner)).toBe(3);
  expect(await unread(commenter)).toBe(1);

  await publishAndWait(event('post.deleted', { postId, authorId: owner }));

  expect((await inbox(owner)).items.map((i) => i.resourceId)).toEqual(['another-post']);
  expect((await inbox(commenter)).items).toEqual([]);
  expect([await unread(owner), await unread(commenter)]).toEqual([1, 0]);
});

it('reaction.removed withdraws a read reaction without moving the count twice; the withdrawn id is gone for read/unread', async () => {
  const [owner, reactor] = [uid('owner'), uid('reactor')];
  const [kept, removed] = [uid('r'), uid('r')];
  // On two posts: two items (reactions on one post would be one grouped item).
  const reaction = (reactionId: string) =>
    event('reaction.added', {
      reactionId,
      actorId: reactor,
      targetType: 'post',
      targetId: `p-3-${reactionId}`,
      targetAuthorId: owner,
      emoji: '❤️',
    });
  await publishAndWait(reaction(kept), reaction(removed));
  const { rows } = await h.pool.query<{ id: string }>(`SELECT id FROM notification_items WHERE idempotency_key = $1`, [
    `reaction:${removed}`,
  ]);
  const removedId = rows[0].id;
  const read = await h.app.inject({
    method: 'POST',
    url: `/v1/users/${owner}/notifications/${removedId}/read`,
    headers: bearer(h.token(owner)),
  });
  expect(read.statusCode).toBe(200);
  expect(await unread(owner)).toBe(1);

  await publishAndWait(
    event('reaction.removed', {
      reactionId: removed,
      actorId: reactor,
      targetType: 'post',
      targetId: `p-3-${removed}`,
    }),
  );

  expect((await inbox(owner)).items.map((i) => i.id)).not.toContain(removedId);
  expect(await unread(owner)).toBe(1); // it was read: only the other one was ever counted
  const unreadAgain = await h.app.inject({
    method: 'POST',
    url: `/v1/users/${owner}/notifications/${removedId}/unread`,
    headers: bearer(h.token(owner)),
  });
  expect(unreadAgain.statusCode).toBe(404);
  for (const row of await countersAndRecount(h.pool)) expect(row.counter).toBe(row.recount);
});

it("an account deletion withdraws what the user caused in others' inboxes, and a late event of theirs notifies nobody", async () => {
  const [deleted, friend, other] = [uid('deleted'), uid('friend'), uid('other')];
  await publishAndWait(
    event('user.followed', { followerId: deleted, followeeId: friend }),
    mention(uid('c'), deleted, friend),
    event('user.followed', { followerId: other, followeeId: friend }),
  );
  // The two follows are one grouped item, the mention another.
  expect(await unread(friend)).toBe(2);

  await publishAndWait(
    buildEvent(
      'user.erased',
      { userId: deleted, erasureId: '7', cause: 'account_deleted' },
      { producer: 'reconciler' },
    ),
  );

  expect((await inbox(friend)).items.map((i) => [i.type, i.group?.count])).toEqual([['follow', 1]]);
  expect(await unread(friend)).toBe(1);
  expect(await announced(friend, 'notification.withdrawn')).toHaveLength(2);

  // A reaction of the deleted user still in a queue (or replayed from a DLQ) arrives afterwards.
  await publishAndWait(
    event('reaction.added', {
      reactionId: uid('r'),
      actorId: deleted,
      targetType: 'post',
      targetId: 'p-4',
      targetAuthorId: friend,
      emoji: '👍',
    }),
  );
  expect(await unread(friend)).toBe(1);
});

it('an operator erasure (no cause) anonymises the actor but withdraws nothing', async () => {
  const [erased, friend] = [uid('erased'), uid('friend')];
  await publishAndWait(event('user.followed', { followerId: erased, followeeId: friend }));
  await publishAndWait(buildEvent('user.erased', { userId: erased, erasureId: '8' }, { producer: 'reconciler' }));
  expect((await inbox(friend)).items).toHaveLength(1);
  expect(await unread(friend)).toBe(1);
});

it('creations and deletions racing on both queues: every deleted comment ends withdrawn, counters equal a recount', async () => {
  const [author, reader] = [uid('author'), uid('reader')];
  const comments = Array.from({ length: 40 }, () => uid('c'));
  // Each comment's mention (critical queue) and deletion (standard queue) published together, so
  // the two consumers run them side by side in every interleaving the broker and batches produce.
  await publishAndWait(
    ...comments.flatMap((commentId, i) => {
      const created = mention(commentId, author, reader);
      const deleted = event('comment.deleted', { commentId, postId: 'p-5', authorId: author });
      return i % 2 ? [created, deleted] : [deleted, created];
    }),
  );
  expect((await inbox(reader)).items).toEqual([]);
  expect(await unread(reader)).toBe(0);
  const withdrawn = await announced(reader, 'notification.withdrawn');
  const keys = (list: Array<{ idempotencyKey: string }>) => list.map((e) => e.idempotencyKey).sort();
  // A mention that won the race was announced and then withdrawn; one that lost was never announced.
  // (Each announcement is confirmed before its source is acked; the test's own consumer may lag.)
  await eventually(
    'every withdrawn mention announced',
    async () => keys(await announced(reader, 'notification.created')).length >= withdrawn.length,
    10_000,
    20,
  );
  expect(keys(withdrawn)).toEqual(keys(await announced(reader, 'notification.created')));
  for (const row of await countersAndRecount(h.pool)) expect(row.counter).toBe(row.recount);
});
