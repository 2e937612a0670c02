import { setTimeout as sleep } from 'node:timers/promises';
import { commentOnPostKey, followKey, mentionKey, reactionKey, replyKey, securityAlertKey } from '@community/contracts';

/**
 * The load generator and its ledger. Every request goes through the demo API, so every event goes
 * through its outbox. One "round" is nine requests that produce every event type the API emits:
 *
 *   POST /v1/users                          user.upserted                     (a new user U)
 *   POST /v1/posts           (poster P)     post.published
 *   POST .../comments        (commenter C)  comment.created + 2 × user.mentioned (M1, M2)
 *   POST .../comments reply  (commenter C') comment.created + 2 × user.mentioned (M3, M4)
 *   POST /v1/reactions ×2    (reactor R)    reaction.added on the comment and on the post
 *   POST /v1/users/U/follow  (follower F)   user.followed
 *   DELETE /v1/users/U/follow               user.unfollowed
 *   POST /v1/security-alerts (for M5)       security.alert
 *
 * and, downstream, notification-service's notification.created for each of the 11 notifications
 * these ask for (4 mention, 1 reply, 2 comment, 2 reaction, 1 follow, 1 security_alert), of which
 * 6 are emailed at once (mention, reply, security_alert are `immediate` by default).
 *
 * Posters, commenters, mentioned users, reactors and followers are disjoint groups, so no two
 * notifications of a round share a slot (one comment addressing a user two ways) and each expected
 * effect is exactly one row. Only an acknowledged request (201 with the new id) enters the ledger,
 * with the effects it implies; a request that failed during a fault is counted and not retried
 * (the client was told "no"; a later round goes on), and a round stops at its first failure.
 */
export type EventType =
  | 'user.upserted'
  | 'post.published'
  | 'comment.created'
  | 'user.mentioned'
  | 'reaction.added'
  | 'user.followed'
  | 'user.unfollowed'
  | 'security.alert'
  | 'notification.created';

export const EVENT_TYPES: readonly EventType[] = [
  'user.upserted',
  'post.published',
  'comment.created',
  'user.mentioned',
  'reaction.added',
  'user.followed',
  'user.unfollowed',
  'security.alert',
  'notification.created',
];

/** An event the ledger expects, keyed by what identifies it in its payload (see checks.ts eventKey). */
export interface LedgerEvent {
  type: EventType;
  key: string;
}

/** A notification the ledger expects: its idempotency key, recipient, and whether it is emailed at once. */
export interface ExpectedNotification {
  key: string;
  userId: string;
  type: 'mention' | 'reply' | 'comment' | 'reaction' | 'follow' | 'security_alert';
  immediateEmail: boolean;
  /** The ledger event whose effect it is (a DLQ'd event accounts for it). */
  cause: string;
}

export class Ledger {
  readonly events = new Map<string, LedgerEvent>();
  readonly notifications = new Map<string, ExpectedNotification>();
  /** Users created by the load: each must be known to notification-service and email-service. */
  readonly users = new Set<string>();
  /** Events that reach feed-service.activity (post.published, user.followed, user.unfollowed), by key. */
  readonly feed = new Set<string>();
  /** Follow edges (`follower/followee`) and the state the last acknowledged request left them in. */
  readonly follows = new Map<string, 'followed' | 'unfollowed'>();
  /** Effects older than this are the set-up's, not the load's. */
  readonly startedAt = new Date();
  readonly refused = new Map<string, number>();
  transportErrors = 0;
  requests = 0;

  add(type: EventType, key: string): string {
    const id = `${type}|${key}`;
    this.events.set(id, { type, key });
    return id;
  }

  notify(n: Omit<ExpectedNotification, 'immediateEmail'>): void {
    this.notifications.set(n.key, {
      ...n,
      immediateEmail: n.type === 'mention' || n.type === 'reply' || n.type === 'security_alert',
    });
    this.add('notification.created', n.key);
  }

  countByType(): Record<EventType, number> {
    const counts = Object.fromEntries(EVENT_TYPES.map((t) => [t, 0])) as Record<EventType, number>;
    for (const e of this.events.values()) counts[e.type]++;
    return counts;
  }

  get failedRequests(): number {
    return [...this.refused.values()].reduce((a, b) => a + b, 0) + this.transportErrors;
  }
}

export interface Cast {
  posters: string[];
  commenters: string[];
  mentionable: string[];
  reactors: string[];
  followers: string[];
  /** Follow every poster from the set-up on and read their feeds: the fan-out's audience. */
  readers: string[];
}

export function cast(prefix: string): Cast {
  const group = (name: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${name}${i}`);
  return {
    posters: group('poster', 5),
    commenters: group('commenter', 6),
    mentionable: group('user', 20),
    reactors: group('reactor', 3),
    followers: group('follower', 8),
    readers: group('reader', 2),
  };
}

export interface LoadOptions {
  apiUrl: () => string;
  cast: Cast;
  /** Unique per run: new users and comment bodies carry it. */
  runId: string;
  /** Rounds started per second (each is 9 requests, 13 API events and 11 notifications). */
  roundsPerSecond: number;
  /** Stop once this many rounds have completed and `until` resolved. */
  rounds: number;
  until: Promise<unknown>;
  ledger: Ledger;
  /** First round number of this phase (ids stay unique across phases). */
  firstRound: number;
}

const MAX_IN_FLIGHT = 24;

export async function runLoad(o: LoadOptions): Promise<{ started: number; completed: number; ms: number }> {
  const started = Date.now();
  const intervalMs = 1000 / o.roundsPerSecond;
  let done = false;
  void o.until.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  const inFlight = new Set<Promise<void>>();
  let n = 0;
  let completed = 0;
  // Ends when the fault is healed and enough rounds completed; or, if rounds keep failing after the
  // heal (the system did not recover), after five times as many attempts: the checks then report it.
  while (!(done && (completed >= o.rounds || n >= o.rounds * 5))) {
    const due = started + n * intervalMs;
    const wait = due - Date.now();
    if (wait > 0) await sleep(wait);
    if (inFlight.size >= MAX_IN_FLIGHT) {
      await Promise.race(inFlight);
      continue;
    }
    const p = round(o, o.firstRound + n++)
      .then((ok) => {
        if (ok) completed++;
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }
  await Promise.all(inFlight);
  return { started: n, completed, ms: Date.now() - started };
}

/** One round; resolves true if all nine requests were acknowledged. */
async function round(o: LoadOptions, i: number): Promise<boolean> {
  const { posters, commenters, mentionable, reactors, followers } = o.cast;
  const L = o.ledger;
  const pick = <T>(xs: T[], k: number) => xs[((k % xs.length) + xs.length) % xs.length];
  const poster = pick(posters, i);
  const c1 = pick(commenters, i);
  const c2 = pick(commenters, i + 1);
  const reactor = pick(reactors, i);
  const follower = pick(followers, i);
  const m = [
    pick(mentionable, i),
    pick(mentionable, i + 5),
    pick(mentionable, i + 10),
    pick(mentionable, i + 15),
    pick(mentionable, i * 7 + 3),
  ];
  const newUser = `${o.runId}-u${i}`;

  const user = await call(o, 'POST', '/v1/users', {
    id: newUser,
    email: `${newUser}@example.test`,
    displayName: `User ${i}`,
  });
  if (!user) return false;
  L.users.add(newUser);
  L.add('user.upserted', newUser);

  const post = await call<{ id: string }>(o, 'POST', '/v1/posts', { title: `Chaos ${i}`, body: `round ${i}` }, poster);
  if (!post) return false;
  L.feed.add(L.add('post.published', post.id));

  const comment = await call<{ id: string }>(
    o,
    'POST',
    `/v1/posts/${post.id}/comments`,
    { body: `hi @${m[0]} and @${m[1]} (${i})` },
    c1,
  );
  if (!comment) return false;
  const cause1 = L.add('comment.created', comment.id);
  L.notify({ key: commentOnPostKey(comment.id, poster), userId: poster, type: 'comment', cause: cause1 });
  for (const u of [m[0], m[1]])
    L.notify({
      key: mentionKey(comment.id, u),
      userId: u,
      type: 'mention',
      cause: L.add('user.mentioned', `${comment.id}/${u}`),
    });

  const reply = await call<{ id: string }>(
    o,
    'POST',
    `/v1/posts/${post.id}/comments`,
    { body: `re: @${m[2]} @${m[3]} (${i})`, parentCommentId: comment.id },
    c2,
  );
  if (!reply) return false;
  const cause2 = L.add('comment.created', reply.id);
  L.notify({ key: replyKey(reply.id, c1), userId: c1, type: 'reply', cause: cause2 });
  L.notify({ key: commentOnPostKey(reply.id, poster), userId: poster, type: 'comment', cause: cause2 });
  for (const u of [m[2], m[3]])
    L.notify({
      key: mentionKey(reply.id, u),
      userId: u,
      type: 'mention',
      cause: L.add('user.mentioned', `${reply.id}/${u}`),
    });

  for (const [targetType, targetId, author] of [
    ['comment', comment.id, c1],
    ['post', post.id, poster],
  ] as const) {
    const reaction = await call<{ id: string }>(
      o,
      'POST',
      '/v1/reactions',
      { targetType, targetId, emoji: '👍' },
      reactor,
    );
    if (!reaction) return false;
    L.notify({
      key: reactionKey(reaction.id),
      userId: author,
      type: 'reaction',
      cause: L.add('reaction.added', reaction.id),
    });
  }

  const followed = await call(o, 'POST', `/v1/users/${newUser}/follow`, undefined, follower);
  if (!followed) return false;
  const followCause = L.add('user.followed', `${follower}/${newUser}`);
  L.feed.add(followCause);
  L.follows.set(`${follower}/${newUser}`, 'followed');
  L.notify({ key: followKey(follower, newUser), userId: newUser, type: 'follow', cause: followCause });

  const unfollowed = await call(o, 'DELETE', `/v1/users/${newUser}/follow`, undefined, follower, 200);
  if (!unfollowed) return false;
  L.feed.add(L.add('user.unfollowed', `${follower}/${newUser}`));
  L.follows.set(`${follower}/${newUser}`, 'unfollowed');

  const alert = await call<{ id: string }>(o, 'POST', '/v1/security-alerts', {
    userId: m[4],
    kind: 'new_login',
    detail: `chaos round ${i}`,
  });
  if (!alert) return false;
  L.notify({
    key: securityAlertKey(alert.id),
    userId: m[4],
    type: 'security_alert',
    cause: L.add('security.alert', alert.id),
  });
  return true;
}

async function call<T = unknown>(
  o: LoadOptions,
  method: string,
  path: string,
  body: unknown,
  actor?: string,
  ok = 201,
): Promise<T | undefined> {
  o.ledger.requests++;
  try {
    const res = await fetch(`${o.apiUrl()}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(actor ? { 'x-user-id': actor } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const json = (await res.json().catch(() => ({}))) as T;
    if (res.status === ok) return json ?? ({} as T);
    const key = `${res.status}`;
    o.ledger.refused.set(key, (o.ledger.refused.get(key) ?? 0) + 1);
  } catch {
    o.ledger.transportErrors++;
  }
  return undefined;
}
