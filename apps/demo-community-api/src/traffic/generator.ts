import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { COMMENTS, EMOJI, people, POST_TITLES, type Person } from './people';

export interface TrafficOptions {
  /** The demo API, e.g. http://127.0.0.1:3000. */
  baseUrl: string;
  /** Actions per second (a comment with mentions yields several events, the rest one each). */
  rate: number;
  logger: Logger;
  /** Size of the user pool (default 20). */
  users?: number;
  /** Requests in flight at most; past it, actions are skipped and counted (default 64). */
  maxInFlight?: number;
}

export interface TrafficStats {
  sent: number;
  ok: number;
  failed: number;
  skipped: number;
}

export interface Traffic {
  /** Resolves once the users and the first posts exist. */
  readonly seeded: Promise<void>;
  stats(): TrafficStats;
  /** Stops issuing requests and waits for those in flight. */
  stop(): Promise<void>;
}

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)];
const chance = (p: number) => Math.random() < p;

/**
 * A realistic mix against the public HTTP API: comments (a third are replies, many mention one or
 * two people, by handle or by display name), reactions, follows and the odd unfollow, new posts,
 * profile updates, and rare security alerts. Only ids the API returned are reused.
 */
export function startTraffic(options: TrafficOptions): Traffic {
  const { baseUrl, rate, logger } = options;
  const maxInFlight = options.maxInFlight ?? 64;
  const pool = people(options.users ?? 20);
  const posts: Array<{ id: string; authorId: string }> = [];
  const comments: Array<{ id: string; postId: string }> = [];
  const stats: TrafficStats = { sent: 0, ok: 0, failed: 0, skipped: 0 };
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  // Aborts requests and waits in flight at stop(), so shutdown never waits out a timeout.
  const abort = new AbortController();
  // Ends early, without an error, once stop() aborts.
  const pause = (ms: number): Promise<void> => sleep(ms, undefined, { signal: abort.signal }).catch(() => undefined);

  async function call(
    method: string,
    path: string,
    actor: string | undefined,
    body?: unknown,
  ): Promise<Record<string, unknown> | undefined> {
    stats.sent += 1;
    try {
      const res = await fetch(`${baseUrl}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(actor ? { 'x-user-id': actor } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.any([abort.signal, AbortSignal.timeout(10_000)]),
      });
      const json = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
      if (res.ok) {
        stats.ok += 1;
        return json;
      }
      stats.failed += 1;
      logger.warn({ method, path, status: res.status, message: json?.message }, 'traffic: request refused');
    } catch (err) {
      if (stopped) return undefined;
      stats.failed += 1;
      logger.warn({ method, path, err: (err as Error).message }, 'traffic: request failed');
    }
    return undefined;
  }

  function remember<T>(list: T[], item: T, max: number): void {
    list.push(item);
    if (list.length > max) list.splice(0, list.length - max);
  }

  async function newPost(author: Person): Promise<void> {
    const post = await call('POST', '/v1/posts', author.id, {
      title: pick(POST_TITLES),
      body: `${pick(COMMENTS)} ${pick(COMMENTS)}`,
    });
    if (post) remember(posts, { id: post.id as string, authorId: author.id }, 200);
  }

  function mentionOf(p: Person): string {
    // Mostly by handle; sometimes by display name without spaces, as people type them.
    return chance(0.8) ? `@${p.id}` : `@${p.displayName.replace(/\s+/g, '')}`;
  }

  async function comment(author: Person): Promise<void> {
    if (posts.length === 0) return newPost(author);
    const reply = comments.length > 0 && chance(0.35) ? pick(comments) : undefined;
    const postId = reply?.postId ?? pick(posts).id;
    let body = pick(COMMENTS);
    if (chance(0.5)) body = `${mentionOf(pick(pool))} ${body}`;
    if (chance(0.15)) body = `${body} cc ${mentionOf(pick(pool))} ${mentionOf(pick(pool))}`;
    const created = await call('POST', `/v1/posts/${postId}/comments`, author.id, { body, parentCommentId: reply?.id });
    if (created) remember(comments, { id: created.id as string, postId }, 500);
  }

  async function act(): Promise<void> {
    const actor = pick(pool);
    const roll = Math.random();
    if (roll < 0.42) return comment(actor);
    if (roll < 0.67) {
      const onComment = comments.length > 0 && chance(0.5);
      const target = onComment ? pick(comments).id : posts.length > 0 ? pick(posts).id : undefined;
      if (!target) return newPost(actor);
      await call('POST', '/v1/reactions', actor.id, {
        targetType: onComment ? 'comment' : 'post',
        targetId: target,
        emoji: pick(EMOJI),
      });
      return;
    }
    const other = pick(pool.filter((p) => p.id !== actor.id));
    if (roll < 0.79) return void (await call('POST', `/v1/users/${other.id}/follow`, actor.id));
    if (roll < 0.83) return void (await call('DELETE', `/v1/users/${other.id}/follow`, actor.id));
    if (roll < 0.93) return newPost(actor);
    if (roll < 0.99) {
      const locale = chance(0.5) ? actor.locale : pick(['en', 'id', 'de', 'fr', 'ja']);
      return void (await call('POST', '/v1/users', undefined, {
        id: actor.id,
        email: actor.email,
        displayName: actor.displayName,
        locale,
      }));
    }
    await call('POST', '/v1/security-alerts', undefined, {
      userId: actor.id,
      kind: pick(['new-login', 'password-changed', 'email-changed']),
      detail: 'from a new device (demo traffic)',
    });
  }

  async function seed(): Promise<void> {
    for (let attempt = 1; !stopped; attempt++) {
      const results = await Promise.all(pool.map((p) => call('POST', '/v1/users', undefined, p)));
      if (results.every(Boolean)) break;
      // The API may still be starting (or its database briefly away): try again, a bit later each time.
      await pause(Math.min(10_000, 500 * attempt));
    }
    for (let i = 0; i < Math.max(3, Math.ceil(pool.length / 3)) && !stopped; i++) await newPost(pick(pool));
  }

  function track(p: Promise<void>): void {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  }

  const seeded = seed().then(() => {
    if (stopped || rate <= 0) return;
    let last = Date.now();
    let due = 0;
    // A 50 ms tick spreads the actions evenly instead of bursting them once a second.
    timer = setInterval(() => {
      const now = Date.now();
      due += ((now - last) / 1000) * rate;
      last = now;
      while (due >= 1) {
        due -= 1;
        if (inFlight.size >= maxInFlight) stats.skipped += 1;
        else track(act());
      }
    }, 50);
    timer.unref();
  });

  return {
    seeded,
    stats: () => ({ ...stats }),
    async stop() {
      stopped = true;
      clearInterval(timer);
      // In-flight requests finish (they are short); only a seeding pause is cut short.
      await Promise.allSettled([...inFlight]);
      abort.abort();
      await seeded.catch(() => undefined);
    },
  };
}
