// createPgPool's `min`: connections opened by a burst stay open past pg-pool's 10 s idle timeout,
// so the next burst does not wait for connection set-up; without it they close.
import { createTestDatabase, eventually, type TestDatabase } from '@community/testing';
import type { Pool } from 'pg';
import { createPgPool } from '../src/index';

jest.setTimeout(30_000);

describe('createPgPool min', () => {
  let db: TestDatabase;
  let observer: Pool;

  beforeAll(async () => {
    db = await createTestDatabase('db_pool_min');
    observer = createPgPool(db.url, { max: 1, applicationName: 'pool-min-observer' });
  });

  afterAll(async () => {
    await observer?.end();
    await db?.drop();
  });

  async function openFour(applicationName: string, min?: number): Promise<Pool> {
    const pool = createPgPool(db.url, { max: 4, min, applicationName });
    // Four at once: each needs its own connection.
    await Promise.all(Array.from({ length: 4 }, () => pool.query('SELECT pg_sleep(0.1)')));
    return pool;
  }
  const connections = async (applicationName: string) =>
    (
      await observer.query(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
        [applicationName],
      )
    ).rows[0].n as number;

  it('keeps the connections a burst opened when min covers them, and lets them close after 10 s idle without it', async () => {
    const kept = await openFour('pool-min-kept', 4);
    const closing = await openFour('pool-min-default');
    try {
      expect(await connections('pool-min-kept')).toBe(4);
      expect(await connections('pool-min-default')).toBe(4);
      // The idle period under test: past pg-pool's idleTimeoutMillis (10 s).
      await new Promise((r) => setTimeout(r, 11_000));
      // The pool without min closes its idle clients; their backends end a moment later. kept's
      // idle timers were armed first (its burst ended first), so by now they have fired too.
      await eventually(
        'the default pool closed its idle connections',
        async () => closing.totalCount === 0 && (await connections('pool-min-default')) === 0,
        20_000,
        50,
      );
      expect(kept.totalCount).toBe(4);
      expect(await connections('pool-min-kept')).toBe(4);
    } finally {
      await Promise.all([kept.end(), closing.end()]);
    }
  });
});
