/**
 * npm run bench:reconcile — the reconciler's unread-counter recount and repair, against a single
 * set-based SQL recount of the same data, in the same run, on a private database:
 *
 *   data:      BENCH_USERS users (100,000) × BENCH_PER_USER notifications (10) = 1,000,000 rows,
 *              a third of them read, 1 in 20 hidden (in-app off); 1 % of the counters drifted.
 *   baseline:  one statement — UPDATE every counter from a GROUP BY over all notifications — in a
 *              transaction rolled back afterwards, so the reconciler then finds the same drift.
 *   measured:  the reconciler's sweep as the job runs it (apps/reconciler recount(): batches of
 *              COUNTER_BATCH_SIZE users read in one snapshot, the drifted ones locked, recounted,
 *              compared, repaired and audited in one transaction), then a check that no drift is left.
 *   live:      the same drift injected again and swept while BENCH_LIVE_WRITERS writers do what
 *              notification-service does per notification (lock the user's counter row, insert the
 *              row, add to the counter, commit) for random users; the bench reports their worst
 *              latency beside the longest batch: a live write waits at most for one batch's repair.
 *
 * Env: BENCH_USERS (100000), BENCH_PER_USER (10), COUNTER_BATCH_SIZE (1000), BENCH_LIVE_WRITERS (2).
 */
import { Registry } from 'prom-client';
import pg from 'pg';
import { createPgPool } from '@community/db';
import { createTestDatabase } from '@community/testing';
import { reconcilerMetrics, recount } from '../../apps/reconciler/src';

const USERS = Number(process.env.BENCH_USERS ?? 100_000);
const PER_USER = Number(process.env.BENCH_PER_USER ?? 10);
const BATCH = Number(process.env.COUNTER_BATCH_SIZE ?? 1_000);
const WRITERS = Number(process.env.BENCH_LIVE_WRITERS ?? 2);

const ms = (t: number) => `${t.toFixed(0)} ms`;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? 0;

async function main(): Promise<void> {
  const db = await createTestDatabase('bench_reconcile');
  const pool = createPgPool(db.url, { max: 6 });
  try {
    process.stdout.write(`seeding ${USERS} users × ${PER_USER} notifications … `);
    let t = performance.now();
    await pool.query(`SET synchronous_commit = off`);
    await pool.query(
      `INSERT INTO notification_items (user_id, type, idempotency_key, slot_key, resource_type, resource_id, in_app, email_channel, source_event_id,
                                       created_version, state_version, read_at)
       SELECT 'u' || lpad(u::text, 7, '0'), 'reaction', 'k:' || u || ':' || g, 'k:' || u || ':' || g, 'post', 'p', (u + g) % 20 <> 0, 'off',
              gen_random_uuid()::text, g, g, CASE WHEN (u * 7 + g) % 3 = 0 THEN now() END
         FROM generate_series(1, $1::int) u, generate_series(1, $2::int) g`,
      [USERS, PER_USER],
    );
    await pool.query(
      `INSERT INTO notification_counters (user_id, unread_count, version)
       SELECT user_id, count(*) FILTER (WHERE in_app AND item_head AND item_unread), $1 FROM notification_items GROUP BY user_id`,
      [PER_USER],
    );
    // 1 % drifted, by a few either way.
    await pool.query(
      `UPDATE notification_counters SET unread_count = unread_count + (hashtext(user_id) % 5) + 3 WHERE hashtext(user_id) % 100 = 0`,
    );
    await pool.query('VACUUM ANALYZE notification_items');
    await pool.query('VACUUM ANALYZE notification_counters');
    const injected = Number(
      (await pool.query(`SELECT count(*) FROM notification_counters WHERE hashtext(user_id) % 100 = 0`)).rows[0].count,
    );
    console.log(`${ms(performance.now() - t)}; ${injected} counters drifted`);

    // Baseline: the single set-based recount, twice (the first warms the cache), rolled back.
    const baseline: number[] = [];
    let baselineFixed = 0;
    for (let i = 0; i < 2; i++) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        t = performance.now();
        const res = await client.query(
          `UPDATE notification_counters c SET unread_count = r.n
             FROM (SELECT user_id, count(*) FILTER (WHERE in_app AND item_head AND item_unread)::int AS n FROM notification_items GROUP BY user_id) r
            WHERE c.user_id = r.user_id AND c.unread_count <> r.n`,
        );
        baseline.push(performance.now() - t);
        baselineFixed = res.rowCount ?? 0;
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
    }
    const base = Math.min(...baseline);
    console.log(
      `baseline  single UPDATE … FROM (GROUP BY): ${baseline.map(ms).join(', ')} (best ${ms(base)}); ${baselineFixed} counters it would fix`,
    );

    // Warm-up of the reconciler's path: a dry run (reads the same rows, changes nothing).
    const metrics = reconcilerMetrics(new Registry());
    t = performance.now();
    const dry = await recount(pool, metrics, { batchSize: BATCH, dryRun: true, source: 'bench' });
    console.log(`dry run   ${ms(performance.now() - t)}: ${dry.checked} users, ${dry.drifted} drifted`);

    const drift = `UPDATE notification_counters SET unread_count = unread_count + (hashtext(user_id) % 5) + 3 WHERE hashtext(user_id) % 100 = 0`;
    const stillOff = async () =>
      Number(
        (
          await pool.query(
            `SELECT count(*) FROM notification_counters c
              WHERE c.unread_count <> (SELECT count(*) FROM notification_items n WHERE n.user_id = c.user_id AND n.in_app AND n.item_head AND n.item_unread)`,
          )
        ).rows[0].count,
      );

    // 1. The sweep alone, as the baseline ran: the ratio.
    let batches: number[] = [];
    t = performance.now();
    const alone = await recount(pool, metrics, {
      batchSize: BATCH,
      dryRun: false,
      source: 'bench',
      onBatch: (b) => batches.push(b.ms),
    });
    const ours = performance.now() - t;
    let left = await stillOff();
    console.log(
      `reconciler sweep (batches of ${BATCH}): ${ms(ours)}; ${alone.checked} users, ${alone.repaired} repaired, ${left} counters still off`,
    );
    console.log(
      `           batches: ${batches.length}, mean ${ms(batches.reduce((a, b) => a + b, 0) / batches.length)}, longest ${ms(Math.max(...batches))}`,
    );
    console.log(`ratio: baseline / reconciler = ${(base / ours).toFixed(2)}× (target ≥ 0.5×)`);

    // 2. The same drift again, swept while live writers do what notification-service does per
    //    notification on random users: their worst latency beside the longest batch.
    await pool.query(drift);
    let live = true;
    const latencies: number[] = [];
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      let n = 0;
      while (live) {
        const user = `u${String(1 + Math.floor(Math.random() * USERS)).padStart(7, '0')}`;
        const start = performance.now();
        await client.query('BEGIN');
        const v = await client.query<{ version: string }>(
          'UPDATE notification_counters SET version = version + 1, updated_at = now() WHERE user_id = $1 RETURNING version',
          [user],
        );
        await client.query(
          `INSERT INTO notification_items (user_id, type, idempotency_key, slot_key, resource_type, resource_id, email_channel, source_event_id, created_version, state_version)
           VALUES ($1, 'reaction', $2, $2, 'post', 'p', 'off', gen_random_uuid()::text, $3, $3)`,
          [user, `live:${w}:${n++}`, v.rows[0].version],
        );
        await client.query('UPDATE notification_counters SET unread_count = unread_count + 1 WHERE user_id = $1', [
          user,
        ]);
        await client.query('COMMIT');
        latencies.push(performance.now() - start);
      }
      await client.end();
      return n;
    });
    batches = [];
    t = performance.now();
    const busy = await recount(pool, metrics, {
      batchSize: BATCH,
      dryRun: false,
      source: 'bench',
      onBatch: (b) => batches.push(b.ms),
    });
    const busyMs = performance.now() - t;
    live = false;
    const writes = (await Promise.all(writers)).reduce((a, b) => a + b, 0);
    left = await stillOff();
    const audited = Number((await pool.query(`SELECT count(*) FROM counter_repairs`)).rows[0].count);
    console.log(
      `with live writes: sweep ${ms(busyMs)}, ${busy.repaired} repaired (${audited} audit rows in all), ${left} counters still off`,
    );
    console.log(
      `           batches: ${batches.length}, mean ${ms(batches.reduce((a, b) => a + b, 0) / batches.length)}, longest ${ms(Math.max(...batches))}`,
    );
    console.log(
      `live writes during the sweep: ${writes} by ${WRITERS} writers; latency p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${pct(latencies, 100).toFixed(1)} ms (longest batch ${ms(Math.max(...batches))})`,
    );
    if (left !== 0) process.exitCode = 1;
  } finally {
    await pool.end();
    await db.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
