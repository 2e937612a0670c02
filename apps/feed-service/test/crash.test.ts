import { randomUUID } from 'node:crypto';
import amqplib from 'amqplib';
import { brokerUserOf } from '@community/messaging';
import Redis from 'ioredis';
import { createPgPool } from '@community/db';
import { createTestDatabase, createTestVhost, type TestDatabase, type TestVhost } from '@community/testing';
import {
  clearPrefix,
  event,
  eventually,
  feedsHolding,
  JWT_SECRET,
  kill9,
  redisPrefix,
  seedFollowers,
  startProcess,
  testConfig,
} from './harness';

/**
 * kill -9 of the service in the middle of a fan-out (20,000 followers in 80 chunks), then a
 * restart: every follower still has exactly one entry, and the chunks checkpointed before the
 * kill are not run again.
 */
const FOLLOWERS = 20_000;
const CHUNK = 250;
let db: TestDatabase;
let vhost: TestVhost;
const prefix = redisPrefix('crash');
let pool: ReturnType<typeof createPgPool>;
let redis: Redis;
let env: Record<string, string>;

beforeAll(async () => {
  [db, vhost] = await Promise.all([createTestDatabase('fs_crash'), createTestVhost('fs-crash')]);
  pool = createPgPool(db.url, { max: 4 });
  const config = testConfig(db, vhost, prefix);
  redis = new Redis(config.REDIS_URL, { keyPrefix: prefix });
  env = {
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    REDIS_URL: config.REDIS_URL,
    JWT_SECRET,
    FEED_REDIS_PREFIX: prefix,
    FEED_FANOUT_CHUNK_SIZE: String(CHUNK),
    FEED_FANOUT_CONCURRENCY: '1',
    FEED_LARGE_AUTHOR_THRESHOLD: '100000',
    SHUTDOWN_TIMEOUT_MS: '3000',
  };
  // Seeding needs the config's window only; the pool and client are this test's own.
  const followers = await seedFollowers({ pool, redis, config }, 'crash-author', FOLLOWERS, { prefix: 'cf' });
  expect(followers).toHaveLength(FOLLOWERS);
}, 120_000);

afterAll(async () => {
  await pool?.end();
  redis?.disconnect();
  await clearPrefix(testConfig(db, vhost, prefix).REDIS_URL, prefix).catch(() => undefined);
  await Promise.all([db?.drop(), vhost?.delete()]);
});

async function publish(body: object & { type: string; id: string }) {
  const conn = await amqplib.connect(vhost.url);
  try {
    const ch = await conn.createConfirmChannel();
    ch.publish('community.events', body.type, Buffer.from(JSON.stringify(body)), {
      persistent: true,
      contentType: 'application/json',
      messageId: body.id,
      type: body.type,
      userId: brokerUserOf(vhost.url),
    });
    await ch.waitForConfirms();
  } finally {
    await conn.close().catch(() => undefined);
  }
}

const doneChunks = async (postId: string) =>
  (
    await pool.query<{ chunk_no: number; attempts: number }>(
      `SELECT chunk_no, attempts FROM feed_fanout_chunks WHERE post_id = $1 AND done_at IS NOT NULL ORDER BY chunk_no`,
      [postId],
    )
  ).rows;

it('resumes a fan-out killed half-way: one entry per follower, finished chunks not redone', async () => {
  const postId = `crash-post-${randomUUID()}`;
  let app = await startProcess(env);
  await publish(event('post.published', { postId, authorId: 'crash-author', title: 'mid-crash', excerpt: '' }));
  // Kill as soon as a few chunks are checkpointed and most are not.
  const before = await eventually(
    'a few chunks done',
    async () => {
      const done = await doneChunks(postId);
      return done.length >= 5 ? done : undefined;
    },
    60_000,
    5,
  ).catch(async (err: Error) => {
    const state = await pool.query(
      `SELECT (SELECT count(*) FROM feed_posts) AS posts, (SELECT count(*) FROM feed_fanout_jobs) AS jobs, (SELECT count(*) FROM feed_fanout_chunks) AS chunks, (SELECT sum(attempts) FROM feed_fanout_chunks) AS attempts`,
    );
    throw new Error(`${err.message} ${JSON.stringify(state.rows[0])}\n${app.output.join('').slice(-3000)}`);
  });
  await kill9(app.proc);
  const atKill = await doneChunks(postId);
  expect(atKill.length).toBeGreaterThanOrEqual(before.length);
  expect(atKill.length).toBeLessThan(FOLLOWERS / CHUNK);

  app = await startProcess(env);
  try {
    await eventually(
      'fan-out resumed and done',
      async () =>
        (await pool.query(`SELECT done_at FROM feed_fanout_jobs WHERE post_id = $1`, [postId])).rows[0]?.done_at,
      90_000,
      100,
    );
  } finally {
    await kill9(app.proc); // the assertions below read the database and Redis only
  }
  const followers = Array.from({ length: FOLLOWERS }, (_, i) => `cf-${String(i + 1).padStart(7, '0')}`);
  expect(await feedsHolding(redis, followers, postId)).toBe(FOLLOWERS);
  const sizes = new Set<number>();
  for (let i = 0; i < followers.length; i += 5000) {
    const pipe = redis.pipeline();
    for (const u of followers.slice(i, i + 5000)) pipe.zcard(`f:${u}`);
    for (const [, v] of (await pipe.exec()) ?? []) sizes.add(Number(v));
  }
  expect([...sizes]).toEqual([1]);

  const after = await doneChunks(postId);
  expect(after).toHaveLength(FOLLOWERS / CHUNK);
  const byChunk = new Map(after.map((c) => [c.chunk_no, c.attempts]));
  // Checkpointed before the kill: started exactly once, never again after the restart.
  for (const c of atKill) expect(byChunk.get(c.chunk_no)).toBe(1);
  const { rows } = await pool.query(`SELECT sum(written)::int AS written FROM feed_fanout_chunks WHERE post_id = $1`, [
    postId,
  ]);
  expect(rows[0].written).toBe(FOLLOWERS);
}, 180_000);
