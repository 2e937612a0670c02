import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { testLogger } from '@community/testing';
import { createFeedService, type FeedService } from '../src/service';
import { event, eventually, FAST_RETRY_TOPOLOGY, feedsHolding, seedFollowers, startHarness, testConfig, type Harness } from './harness';

/**
 * FEED_LANES: an activity replica (FEED_LANES=activity) writes one-chunk fan-outs itself and never
 * takes a large fan-out's chunks; a fan-out replica (FEED_LANES=fanout) on the same broker,
 * database and Redis takes them (docs/FEED.md "Lanes").
 */
let h: Harness;
let fanoutReplica: FeedService | undefined;

beforeAll(async () => {
  h = await startHarness('lanes', { env: { FEED_LANES: 'activity', FEED_FANOUT_CHUNK_SIZE: '10' } });
}, 60_000);
afterAll(async () => {
  await fanoutReplica?.stop();
  await fanoutReplica?.app.close();
  await h?.close();
});

async function chunksDone(postId: string): Promise<{ total: number; done: number }> {
  const { rows } = await h.pool.query<{ total: number; done: number }>(
    `SELECT count(*)::int AS total, (count(*) FILTER (WHERE done_at IS NOT NULL))::int AS done FROM feed_fanout_chunks WHERE post_id = $1`,
    [postId],
  );
  return rows[0];
}

it('an activity replica writes small posts and leaves the chunks of a large fan-out to a fan-out replica', async () => {
  const big = `big-${randomUUID().slice(0, 8)}`;
  const small = `small-${randomUUID().slice(0, 8)}`;
  const bigFollowers = await seedFollowers(h, big, 35);
  const smallFollowers = await seedFollowers(h, small, 10);
  const bigPost = `bp-${randomUUID()}`;
  const smallPost = `sp-${randomUUID()}`;

  await h.publish(event('post.published', { postId: bigPost, authorId: big, title: 'big', excerpt: 'four chunks' }));
  await eventually('the large fan-out planned', async () => (await chunksDone(bigPost)).total === 4);
  await h.publish(event('post.published', { postId: smallPost, authorId: small, title: 'small', excerpt: 'one chunk' }));
  await eventually('the small post written by the activity replica', async () => (await feedsHolding(h.redis, smallFollowers, smallPost)) === 10);

  await sleep(500); // the chunks sit on feed-service.fanout: no replica here consumes it
  expect(await chunksDone(bigPost)).toEqual({ total: 4, done: 0 });
  expect(await feedsHolding(h.redis, bigFollowers, bigPost)).toBe(0);

  const config = testConfig(h.db, h.vhost, h.prefix, { env: { FEED_LANES: 'fanout', FEED_FANOUT_CHUNK_SIZE: '10' } });
  fanoutReplica = createFeedService(config, { logger: testLogger('lanes-fanout'), registry: new Registry(), topology: FAST_RETRY_TOPOLOGY });
  await fanoutReplica.start();
  await eventually('the fan-out replica wrote every chunk', async () => (await chunksDone(bigPost)).done === 4, 20_000);
  expect(await feedsHolding(h.redis, bigFollowers, bigPost)).toBe(35);
  expect((await fanoutReplica.metrics.chunks.get()).values.find((v) => v.labels.outcome === 'done')?.value).toBe(4);
}, 60_000);

it('refuses an unknown FEED_LANES, naming the variable', () => {
  expect(() => testConfig(h.db, h.vhost, h.prefix, { env: { FEED_LANES: 'chunks' } })).toThrow(/FEED_LANES/);
});
