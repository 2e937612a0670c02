import { randomUUID } from 'node:crypto';
import type { AnyEvent } from '@community/contracts';
import { createNotificationBatchHandler } from '../src/handlers/notification-batch';
import { BATCH_TIMEOUT_MS } from '../src/queues';
import { batchItems, bearer, event, mention, startHarness, type Harness } from './harness';

/**
 * A comment that replies to X and mentions X: whatever order the two events arrive in (one batch,
 * or two batches either way round), X ends with exactly the notification the mention makes when it
 * arrives first: its type, its in-app flag and email channel from X's own preferences, unread,
 * counted, and one notification.created for it. The two events travel on different queues, so
 * every order happens in production; the batch handler is driven directly to enforce each one.
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness('slotorder', { amqp: false });
});
afterAll(async () => h.close());

type Order = 'mention then reply' | 'reply then mention' | 'one batch, reply first' | 'one batch, mention first';
const ORDERS: Order[] = [
  'mention then reply',
  'reply then mention',
  'one batch, reply first',
  'one batch, mention first',
];

async function deliver(order: Order, m: AnyEvent, reply: AnyEvent): Promise<void> {
  const handle = createNotificationBatchHandler({
    pool: h.pool,
    emit: h.emit,
    consumer: 'slot-order',
    metrics: h.metrics,
    batchTimeoutMs: BATCH_TIMEOUT_MS,
  });
  const ctx = {
    logger: batchItems([m])[0].ctx.logger,
    signal: new AbortController().signal,
    queue: 'slot-order',
    handler: 'test',
  };
  const batches: AnyEvent[][] = {
    'mention then reply': [[m], [reply]],
    'reply then mention': [[reply], [m]],
    'one batch, reply first': [[reply, m]],
    'one batch, mention first': [[m, reply]],
  }[order];
  for (const batch of batches) {
    const results = await handle(batchItems(batch), ctx);
    for (const r of results ?? []) expect(r).not.toBeInstanceOf(Error);
  }
}

interface Final {
  rows: unknown[];
  unread: number;
  mentionEvents: unknown[];
  otherEvents: string[];
}

/** The final state of `user`'s inbox, with the scenario's own ids (`names`) replaced by placeholders. */
async function finalStateOf(user: string, names: Record<string, string> = {}): Promise<Final> {
  const { rows } = await h.pool.query(
    `SELECT id, type, idempotency_key, in_app, email_channel, read_at, resource_id, actor_id, excerpt
     FROM notification_items WHERE user_id = $1`,
    [user],
  );
  const counter = await h.pool.query('SELECT unread_count FROM notification_counters WHERE user_id = $1', [user]);
  const events = h.createdFor(user).map(({ notificationId, type, emailChannel, idempotencyKey }) => ({
    notificationId,
    type,
    emailChannel,
    idempotencyKey,
  }));
  const ids = new Map(rows.map((r, i) => [r.id as string, `row${i}`]));
  const anonymous = (id: string) => ids.get(id) ?? 'a notification that no longer exists';
  const final: Final = {
    // ids are random per run: compared by which row they name.
    rows: rows.map(({ id, ...rest }) => ({ ...rest, id: anonymous(id) })),
    unread: counter.rows[0]?.unread_count ?? 0,
    mentionEvents: events
      .filter((e) => e.type === 'mention')
      .map((e) => ({ ...e, notificationId: anonymous(e.notificationId) })),
    otherEvents: events.filter((e) => e.type !== 'mention').map((e) => e.type),
  };
  let json = JSON.stringify(final);
  for (const [id, name] of Object.entries(names)) json = json.split(id).join(name);
  return JSON.parse(json) as Final;
}

async function scenario(order: Order, prefs: Record<string, { inApp?: boolean; email?: string }>): Promise<Final> {
  const [author, x] = [`u-${randomUUID()}`, `u-${randomUUID()}`];
  const commentId = `c-${randomUUID()}`;
  if (Object.keys(prefs).length) {
    const put = await h.app.inject({
      method: 'PUT',
      url: `/v1/users/${x}/preferences`,
      headers: bearer(h.token(x)),
      payload: { preferences: prefs },
    });
    expect(put.statusCode).toBe(200);
  }
  const m = event('user.mentioned', {
    commentId,
    postId: 'p-1',
    actorId: author,
    mentionedUserId: x,
    excerpt: 'hey @x',
  });
  const reply = event('comment.created', {
    commentId,
    postId: 'p-1',
    postAuthorId: author,
    authorId: author,
    parentCommentId: 'c-parent',
    parentAuthorId: x,
    excerpt: 'hey @x',
  });
  await deliver(order, m, reply);
  return finalStateOf(x, { [x]: 'X', [author]: 'AUTHOR', [commentId]: 'COMMENT' });
}

describe('mention and reply for the same comment end the same in every order', () => {
  it.each([
    [
      'replies hidden in-app, mention emails immediate',
      { reply: { inApp: false, email: 'digest' }, mention: { inApp: true, email: 'immediate' } },
    ],
    ['default preferences', {}],
    [
      'mentions email-only, replies in-app without email',
      { reply: { inApp: true, email: 'off' }, mention: { inApp: false, email: 'digest' } },
    ],
  ])('%s', async (_name, prefs) => {
    const finals = new Map<Order, Final>();
    for (const order of ORDERS) finals.set(order, await scenario(order, prefs));
    const reference = finals.get('mention then reply') as Final;

    // The mention as if it had arrived first: one row, its own channels, unread, counted once,
    // one notification.created naming that row with the mention's email channel.
    const mentionPrefs = {
      inApp: true,
      email: 'immediate',
      ...(prefs as Record<string, { inApp?: boolean; email?: string }>).mention,
    };
    expect(reference.rows).toEqual([
      expect.objectContaining({
        id: 'row0',
        type: 'mention',
        in_app: mentionPrefs.inApp,
        email_channel: mentionPrefs.email,
        read_at: null,
      }),
    ]);
    expect(reference.unread).toBe(mentionPrefs.inApp ? 1 : 0);
    expect(reference.mentionEvents).toEqual([
      expect.objectContaining({ notificationId: 'row0', emailChannel: mentionPrefs.email }),
    ]);
    expect(reference.otherEvents).toEqual([]);

    for (const order of ORDERS) {
      const final = finals.get(order) as Final;
      expect({ order, rows: final.rows, unread: final.unread, mentionEvents: final.mentionEvents }).toEqual({
        order,
        rows: reference.rows,
        unread: reference.unread,
        mentionEvents: reference.mentionEvents,
      });
      // The reply's own event exists only where the reply was committed (and announced) before
      // the mention existed: it cannot be called back, and it names a notification now replaced.
      expect(final.otherEvents).toEqual(order === 'reply then mention' ? ['reply'] : []);
    }
  });

  it('a reply the user already read does not make the later mention read', async () => {
    const [author, x] = [`u-${randomUUID()}`, `u-${randomUUID()}`];
    const commentId = `c-${randomUUID()}`;
    const reply = event('comment.created', {
      commentId,
      postId: 'p-1',
      postAuthorId: author,
      authorId: author,
      parentCommentId: 'c-parent',
      parentAuthorId: x,
      excerpt: 'hey',
    });
    const handle = createNotificationBatchHandler({
      pool: h.pool,
      emit: h.emit,
      consumer: 'slot-order',
      metrics: h.metrics,
      batchTimeoutMs: BATCH_TIMEOUT_MS,
    });
    const ctx = {
      logger: batchItems([reply])[0].ctx.logger,
      signal: new AbortController().signal,
      queue: 'slot-order',
      handler: 'test',
    };
    await handle(batchItems([reply]), ctx);
    const { rows } = await h.pool.query('SELECT id FROM notification_items WHERE user_id = $1', [x]);
    const read = await h.app.inject({
      method: 'POST',
      url: `/v1/users/${x}/notifications/${rows[0].id}/read`,
      headers: bearer(h.token(x)),
    });
    expect(read.json().count).toBe(0);

    await handle(batchItems([mention(commentId, author, x)]), ctx);

    const list = await h.app.inject({ url: `/v1/users/${x}/notifications`, headers: bearer(h.token(x)) });
    expect(list.json().items).toEqual([expect.objectContaining({ type: 'mention', readAt: null })]);
    const count = await h.app.inject({ url: `/v1/users/${x}/notifications/unread-count`, headers: bearer(h.token(x)) });
    expect(count.json().count).toBe(1);
    expect((await finalStateOf(x)).mentionEvents).toHaveLength(1);
  });
});
