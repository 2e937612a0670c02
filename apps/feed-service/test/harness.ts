import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import Redis from 'ioredis';
import type { Pool } from 'pg';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import { buildEvent, COMMUNITY_TOPOLOGY, type EventData, type EventOf, type EventType } from '@community/contracts';
import type { Topology } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  freePort,
  type TestDatabase,
  testLogger,
  testOperators,
  testRedisPrefix,
  type TestVhost,
} from '@community/testing';
import { loadFeedConfig, type FeedConfig } from '../src/config';
import { createFeedService, type FeedService } from '../src/service';

export const JWT_SECRET = 'test-secret-0123456789-abcdefghijklmnop';
/** The operators ADMIN_KEYS trusts here (each with a key of their own). */
export const OPERATORS = testOperators();
export const DAY_MS = 86_400_000;

/** Short retry tiers: a test waits seconds, not minutes, for a delayed retry. */
export const FAST_RETRY_TOPOLOGY: Topology = {
  ...COMMUNITY_TOPOLOGY,
  queues: COMMUNITY_TOPOLOGY.queues.map((q) => ({ ...q, retryDelaysMs: [200, 500, 1000, 2000, 4000] })),
};

export interface HarnessOptions {
  amqp?: boolean;
  redisUrl?: string;
  env?: Record<string, string>;
  /** The service's logger (default: silent); `captureLogger` records what it says. */
  logger?: Logger;
}

export interface Harness {
  service: FeedService;
  config: FeedConfig;
  db: TestDatabase;
  pool: Pool;
  vhost?: TestVhost;
  /** A client on the same Redis and prefix as the service, for assertions and seeding. */
  redis: Redis;
  prefix: string;
  /** A user token for `sub`; with the `admin` scope, the admin token of operator `sub` (EdDSA, own key). */
  token(sub: string, scope?: string): string;
  publish(event: {
    id: string;
    type: string;
    version: number;
    occurredAt: string;
    correlationId: string;
  }): Promise<void>;
  feed(
    userId: string,
    query?: { limit?: number; cursor?: string },
    as?: string,
  ): Promise<{ status: number; body: FeedBody; source?: string }>;
  /** Removes this harness's Redis keys (SCAN + DEL of its own prefix; never FLUSHALL: Redis is shared). */
  clearRedis(): Promise<void>;
  close(): Promise<void>;
}

export interface FeedBody {
  items: Array<{ postId: string; authorId: string; title: string; excerpt: string; publishedAt: string }>;
  nextCursor: string | null;
}

export function testConfig(
  db: TestDatabase,
  vhost: TestVhost | undefined,
  prefix: string,
  options: HarnessOptions = {},
): FeedConfig {
  return loadFeedConfig({
    DATABASE_URL: db.url,
    AMQP_URL: vhost?.url ?? 'amqp://guest:guest@127.0.0.1:5672',
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    JWT_SECRET,
    ADMIN_KEYS: OPERATORS.adminKeys,
    PORT: '0',
    LOG_LEVEL: 'silent',
    DATABASE_POOL_MAX: '8',
    SHUTDOWN_TIMEOUT_MS: '3000',
    FEED_REDIS_PREFIX: prefix,
    ...options.env,
  });
}

export function redisPrefix(name: string): string {
  return testRedisPrefix(`feed:${name}`);
}

/** One service in-process against its own vhost, database and Redis prefix, built by the service's own builder. */
export async function startHarness(name: string, options: HarnessOptions = {}): Promise<Harness> {
  const withAmqp = options.amqp ?? true;
  const [db, vhost] = await Promise.all([
    createTestDatabase(`fs_${name}`),
    withAmqp ? createTestVhost(`fs-${name}`) : Promise.resolve(undefined),
  ]);
  const prefix = redisPrefix(name);
  const config = testConfig(db, vhost, prefix, options);
  const service = createFeedService(config, {
    logger: options.logger ?? testLogger(name),
    registry: new Registry(),
    messaging: withAmqp,
    topology: FAST_RETRY_TOPOLOGY,
  });
  await service.start();
  await service.app.ready();
  const redis = new Redis(config.REDIS_URL, {
    keyPrefix: prefix,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: () => 200,
  });
  redis.on('error', () => undefined);
  await redis.connect().catch(() => undefined);

  const h: Harness = {
    service,
    config,
    db,
    pool: service.pool,
    vhost,
    redis,
    prefix,
    token: (sub, scope) =>
      scope?.split(' ').includes('admin')
        ? OPERATORS.token(sub, 'feed-service')
        : service.app.jwt.sign(scope === undefined ? { sub } : { sub, scope }),
    async publish(event) {
      if (!service.messaging) throw new Error('harness started without AMQP');
      await service.messaging.publisher.publish(event);
    },
    async feed(userId, query = {}, as = userId) {
      const qs = new URLSearchParams();
      if (query.limit !== undefined) qs.set('limit', String(query.limit));
      if (query.cursor !== undefined) qs.set('cursor', query.cursor);
      const res = await service.app.inject({
        method: 'GET',
        url: `/v1/users/${encodeURIComponent(userId)}/feed?${qs}`,
        headers: { authorization: `Bearer ${h.token(as)}` },
      });
      return {
        status: res.statusCode,
        body: res.json() as FeedBody,
        source: res.headers['x-feed-source'] as string | undefined,
      };
    },
    async clearRedis() {
      await clearPrefix(config.REDIS_URL, prefix);
    },
    async close() {
      await service.stop();
      await service.app.close();
      await h.clearRedis().catch(() => undefined);
      redis.disconnect();
      await Promise.all([db.drop(), vhost?.delete()]);
    },
  };
  return h;
}

/** A logger that keeps every line it is given (parsed), for tests that wait for what the service said. */
export function captureLogger(name: string, level = 'info'): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { name, level },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

export async function clearPrefix(url: string, prefix: string): Promise<void> {
  const raw = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  raw.on('error', () => undefined);
  try {
    await raw.connect();
    let cursor = '0';
    do {
      const [next, keys] = await raw.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await raw.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    raw.disconnect();
  }
}

export function event<T extends EventType>(type: T, data: EventData<T>, occurredAt?: Date, id?: string): EventOf<T> {
  return buildEvent(type, data, { producer: 'community-api', occurredAt, id });
}

/** Zero-padded follower ids, so id order is numeric order. */
export const followerId = (prefix: string, i: number) => `${prefix}-${String(i).padStart(7, '0')}`;

/**
 * Seeds `count` followers of `author` in one INSERT … SELECT generate_series each: the edges, the
 * author's follower count, the followers' activity (active now, or `lastActiveAt`), and, for
 * materialised feeds, their live:/ready: keys, as a read would have left them.
 */
export async function seedFollowers(
  h: Pick<Harness, 'pool' | 'redis' | 'config'>,
  author: string,
  count: number,
  options: { prefix?: string; lastActiveAt?: Date; materialised?: boolean; from?: number } = {},
): Promise<string[]> {
  const prefix = options.prefix ?? `f-${author}`;
  const from = options.from ?? 1;
  const to = from + count - 1;
  const at = options.lastActiveAt ?? new Date();
  await h.pool.query(
    `INSERT INTO feed_follows (follower_id, followee_id, active, occurred_at)
     SELECT $1 || '-' || lpad(i::text, 7, '0'), $2, true, now() - interval '1 day' FROM generate_series($3::int, $4::int) i`,
    [prefix, author, from, to],
  );
  await h.pool.query(
    `INSERT INTO feed_user_activity (user_id, last_active_at)
     SELECT $1 || '-' || lpad(i::text, 7, '0'), $2 FROM generate_series($3::int, $4::int) i
     ON CONFLICT (user_id) DO UPDATE SET last_active_at = EXCLUDED.last_active_at`,
    [prefix, at, from, to],
  );
  await h.pool.query(
    `INSERT INTO feed_authors (author_id, follower_count) VALUES ($1, $2) ON CONFLICT (author_id) DO UPDATE SET follower_count = feed_authors.follower_count + $2`,
    [author, count],
  );
  const ids = Array.from({ length: count }, (_, i) => followerId(prefix, from + i));
  if (options.materialised ?? true) {
    const ttl = h.config.FEED_ACTIVE_WINDOW_DAYS * DAY_MS;
    for (let i = 0; i < ids.length; i += 5000) {
      const pipe = h.redis.pipeline();
      for (const id of ids.slice(i, i + 5000))
        pipe.set(`live:${id}`, '1', 'PX', ttl).set(`ready:${id}`, '1', 'PX', ttl);
      await pipe.exec();
    }
  }
  return ids;
}

/** How many of `users`' feeds hold `postId` (ZSCORE, pipelined), and how many entries of it in total. */
export async function feedsHolding(redis: Redis, users: string[], postId: string): Promise<number> {
  let n = 0;
  for (let i = 0; i < users.length; i += 5000) {
    const pipe = redis.pipeline();
    for (const u of users.slice(i, i + 5000)) pipe.zscore(`f:${u}`, postId);
    for (const [, v] of (await pipe.exec()) ?? []) if (v !== null) n++;
  }
  return n;
}

/**
 * A redis-server of this test's own (never stop the shared one): no persistence, so a restart is a
 * flush. `acl`: ACL users (redis.conf `user` lines, one array of words each) instead of the
 * password-less default user, which is then switched off; `url` then logs in as the first of them.
 */
export async function startPrivateRedis(
  port?: number,
  acl?: { users: string[][]; login: { user: string; password: string } },
): Promise<{ url: string; port: number; stop(): Promise<void>; start(): Promise<void> }> {
  const p = port ?? (await freePort());
  let proc: ChildProcess | undefined;
  const login = acl ? `${encodeURIComponent(acl.login.user)}:${encodeURIComponent(acl.login.password)}@` : '';
  const url = `redis://${login}127.0.0.1:${p}`;
  const aclArgs = acl ? ['--user', 'default', 'off', ...acl.users.flatMap((words) => ['--user', ...words])] : [];
  const ctl = {
    url,
    port: p,
    async start() {
      proc = spawn(
        'redis-server',
        ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...aclArgs],
        { stdio: 'ignore' },
      );
      await eventually(
        'private redis up',
        async () => {
          const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
          c.on('error', () => undefined);
          try {
            await c.connect();
            return (await c.ping()) === 'PONG';
          } finally {
            c.disconnect();
          }
        },
        10_000,
        50,
      );
    },
    async stop() {
      if (!proc || proc.exitCode !== null) return;
      const exited = once(proc, 'exit');
      proc.kill('SIGKILL');
      await exited;
    },
  };
  await ctl.start();
  return ctl;
}

/** The service as a process (main.ts, as `npm start` runs it), for kill -9. */
export async function startProcess(
  env: Record<string, string>,
): Promise<{ proc: ChildProcess; url: string; output: string[] }> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['-r', '@swc-node/register', path.join(__dirname, '../src/main.ts')], {
    cwd: path.resolve(__dirname, '../../..'),
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  proc.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
  proc.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    'feed-service ready',
    async () => {
      if (proc.exitCode !== null)
        throw new Error(`feed-service exited ${proc.exitCode}: ${output.join('').slice(-2000)}`);
      return (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200;
    },
    30_000,
    100,
  );
  return { proc, url, output };
}

export async function kill9(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = once(proc, 'exit');
  proc.kill('SIGKILL');
  await exited;
}

export { eventually };

/** Re-exported: tests built on this harness import it from here. */
export { freePort };
