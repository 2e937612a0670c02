import { randomUUID } from 'node:crypto';
import { DISCARD_MAX_PER_CALL } from '../src/dlq/routes';
import { purgeFinalDlqMessages } from '../src/store/retention';
import { startDlqHarness, WORK, type DlqHarness } from './dlq-harness';
import { runOpsCli } from './ops-cli';

/**
 * A discard can be undone, and one call cannot discard everything (docs/DLQ-CONSOLE.md "Discard").
 * The dead letters are seeded straight into dlq_messages (ingest is dlq.test.ts's subject): what
 * is tested is the state each action leaves, the bodies kept, the audit, and the bound by count.
 */
let h: DlqHarness;
const DAY_MS = 86_400_000;

beforeAll(async () => {
  h = await startDlqHarness('restore');
});
afterAll(async () => h?.close());

/** `n` pending dead letters on a DLQ of their own; returns their ids and the DLQ's name. */
async function seed(n: number): Promise<{ queue: string; ids: string[] }> {
  const queue = `${WORK}.dlq-${randomUUID().slice(0, 8)}`;
  const { rows } = await h.pool.query<{ id: string }>(
    `INSERT INTO dlq_messages (queue, original_queue, message_id, dead_lettered_at, properties, headers, body, error_class, error_message, error_kind, fingerprint)
     SELECT $1, $2, 'm-' || $1 || '-' || g, now(), '{}', '{"x-error-class":"PermanentError"}', convert_to('{"order":' || g || '}', 'UTF8'),
            'PermanentError', 'order ' || g || ' refused', 'permanent', 'f-' || $1
       FROM generate_series(1, $3::int) g
     RETURNING id::text`,
    [queue, WORK, n],
  );
  return { queue, ids: rows.map((r) => r.id).sort((a, b) => Number(a) - Number(b)) };
}

const api = async (method: 'GET' | 'POST', url: string, payload?: unknown, sub = 'alice') => {
  const res = await h.app.inject({ method, url, payload: payload as object, headers: h.adminHeaders(sub) });
  return { status: res.statusCode, body: res.json() };
};
const states = async (ids: string[]) =>
  (
    await h.pool.query<{ state: string }>(
      `SELECT state::text FROM dlq_messages WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [ids],
    )
  ).rows.map((r) => r.state);

describe('restore: the undo of a discard', () => {
  it('brings discarded messages back to pending with their bodies, says who discarded them and until when, and audits both', async () => {
    const { ids } = await seed(3);
    const before = (
      await h.pool.query(`SELECT id::text, body FROM dlq_messages WHERE id = ANY($1::bigint[]) ORDER BY id`, [ids])
    ).rows;
    const discarded = await api('POST', '/v1/admin/dlq/discard', { ids: ids.slice(0, 2), dryRun: false }, 'bob');
    expect(discarded.body).toMatchObject({ matched: 2, discarded: 2 });
    expect(await states(ids)).toEqual(['discarded', 'discarded', 'pending']);

    // Who and when, and the window, on the message itself.
    const shown = await api('GET', `/v1/admin/dlq/messages/${ids[0]}`);
    expect(shown.body).toMatchObject({ state: 'discarded', discardedBy: 'bob', body: '{"order":1}' });
    const until = Date.parse(shown.body.restorableUntil) - Date.parse(shown.body.discardedAt);
    expect(Math.abs(until - 30 * DAY_MS)).toBeLessThan(60_000); // the window is DLQ_RETENTION_DAYS (30 by default)

    // Dry run by default: it says what, changes nothing.
    const dry = await api('POST', '/v1/admin/dlq/restore', { ids });
    expect(dry.body).toMatchObject({ dryRun: true, action: 'restore', matched: 2 }); // the pending one is not restorable
    expect(await states(ids)).toEqual(['discarded', 'discarded', 'pending']);

    const restored = await api('POST', '/v1/admin/dlq/restore', { ids, dryRun: false }, 'carol');
    expect(restored.body).toMatchObject({ dryRun: false, matched: 2, restored: 2, skipped: 0 });
    expect(await states(ids)).toEqual(['pending', 'pending', 'pending']);
    const after = (
      await h.pool.query(`SELECT id::text, body FROM dlq_messages WHERE id = ANY($1::bigint[]) ORDER BY id`, [ids])
    ).rows;
    expect(after).toEqual(before);

    // The audit: the discard by bob, the restore by carol, on the message's history and in the tables.
    const history = (await api('GET', `/v1/admin/dlq/messages/${ids[0]}`)).body.history as Array<{
      action: string;
      requestedBy: string;
      result: string;
    }>;
    expect(history.map((x) => [x.action, x.requestedBy, x.result])).toEqual([
      ['discard', 'bob', 'discarded'],
      ['restore', 'carol', 'restored'],
    ]);
    // Pending again: a replay may select it (a discarded one it never would).
    expect((await api('POST', '/v1/admin/dlq/replay', { ids: ids.slice(0, 1) })).body.matched).toBe(1);
  });

  it('past the window a discard is final: restore refuses it, and the retention job purges it', async () => {
    const { ids } = await seed(2);
    await api('POST', '/v1/admin/dlq/discard', { ids, dryRun: false }, 'bob');
    // One was discarded 31 days ago (the database's clock, as the window is computed there).
    await h.pool.query(`UPDATE dlq_messages SET acted_at = now() - interval '31 days' WHERE id = $1::bigint`, [ids[0]]);
    const restored = await api('POST', '/v1/admin/dlq/restore', { ids, dryRun: false }, 'carol');
    expect(restored.body).toMatchObject({ matched: 1, restored: 1 });
    expect(await states(ids)).toEqual(['discarded', 'pending']);

    await purgeFinalDlqMessages(h.pool, { olderThanMs: 30 * DAY_MS, batchSize: 100, dryRun: false });
    expect(await states(ids)).toEqual(['pending']);
    expect((await api('GET', `/v1/admin/dlq/messages/${ids[0]}`)).status).toBe(404);
  });
});

describe('a bulk discard has a bound', () => {
  it(`one call discards at most ${DISCARD_MAX_PER_CALL} messages unless it says all, with the exact count expected`, async () => {
    const { queue, ids } = await seed(DISCARD_MAX_PER_CALL + 1);
    const count = async (state: string) =>
      (
        await h.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM dlq_messages WHERE queue = $1 AND state = $2::dlq_message_state`,
          [queue, state],
        )
      ).rows[0].n;
    const operations = async () =>
      (await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM dlq_operations WHERE action = 'discard'`))
        .rows[0].n;

    const dry = await api('POST', '/v1/admin/dlq/discard', { filter: { queue } });
    expect(dry.body).toMatchObject({
      dryRun: true,
      matched: DISCARD_MAX_PER_CALL + 1,
      maxPerCall: DISCARD_MAX_PER_CALL,
      needsAll: true,
    });

    const opsBefore = await operations();
    const refused = await api('POST', '/v1/admin/dlq/discard', {
      filter: { queue, asOf: dry.body.asOf },
      dryRun: false,
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      code: 'RC_DLQ_DISCARD_TOO_MANY',
      message: expect.stringContaining(`"expectedCount": ${DISCARD_MAX_PER_CALL + 1}`),
    });
    const wrongCount = await api('POST', '/v1/admin/dlq/discard', {
      filter: { queue, asOf: dry.body.asOf },
      dryRun: false,
      all: true,
      expectedCount: DISCARD_MAX_PER_CALL,
    });
    expect(wrongCount.status).toBe(409);
    expect(wrongCount.body.code).toBe('RC_DLQ_DISCARD_COUNT_CHANGED');
    // Refused means nothing happened, not even an operation row.
    expect(await count('pending')).toBe(DISCARD_MAX_PER_CALL + 1);
    expect(await operations()).toBe(opsBefore);

    const done = await api('POST', '/v1/admin/dlq/discard', {
      filter: { queue, asOf: dry.body.asOf },
      dryRun: false,
      all: true,
      expectedCount: DISCARD_MAX_PER_CALL + 1,
    });
    expect(done.body).toMatchObject({ matched: DISCARD_MAX_PER_CALL + 1, discarded: DISCARD_MAX_PER_CALL + 1 });
    // And the whole bulk comes back with one restore.
    const restored = await api('POST', '/v1/admin/dlq/restore', { filter: { queue }, dryRun: false });
    expect(restored.body).toMatchObject({ restored: ids.length });
    expect(await count('pending')).toBe(ids.length);
  });

  it('ops dlq discard refuses past the bound without --all, echoes the dry run count with it, and ops dlq restore undoes it', async () => {
    const { queue } = await seed(DISCARD_MAX_PER_CALL + 1);
    const base = await h.app.listen({ host: '127.0.0.1', port: 0 });
    const run = async (...args: string[]) => {
      const { code, stdout, stderr } = await runOpsCli(args, {
        RECONCILER_URL: base,
        OPS_TOKEN: h.token('frank', 'admin'),
      });
      return { code, out: stdout, err: stderr };
    };
    const pendingCount = async () =>
      (
        await h.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM dlq_messages WHERE queue = $1 AND state = 'pending'`,
          [queue],
        )
      ).rows[0].n;

    const refused = await run('dlq', 'discard', '--queue', queue, '--yes');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      new RegExp(`refused: ${DISCARD_MAX_PER_CALL + 1} messages is more than the ${DISCARD_MAX_PER_CALL}`),
    );
    expect(await pendingCount()).toBe(DISCARD_MAX_PER_CALL + 1);

    const all = await run('dlq', 'discard', '--queue', queue, '--yes', '--all');
    expect(all.code).toBe(0);
    expect(all.out).toMatch(/discard: done \d+\/1001 \(1001 ok/);
    expect(await pendingCount()).toBe(0);

    const restore = await run('dlq', 'restore', '--queue', queue, '--yes');
    expect(restore.code).toBe(0);
    expect(restore.out).toMatch(/restore: done \d+\/1001 \(1001 ok/);
    expect(await pendingCount()).toBe(DISCARD_MAX_PER_CALL + 1);
  });
});
