import { breachedRows, runFaultSuite } from './chaos/spawn-suite';

/**
 * The fault suite's short profile (e2e/chaos/run.ts, CHAOS_PROFILE=short): every fault of
 * docs/RELIABILITY.md under load, on a RabbitMQ node, a Postgres cluster and a Redis of its own, so it
 * disturbs no other test: `npm test` runs it in the isolated run, beside the regular suite from its
 * start, so its length (five apps, three servers, a load) overlaps the rest. Fails on any invariant breach:
 * a lost or duplicated effect, a DLQ message without a reason or matching no ledger event, a missing
 * or duplicated email, a counter off, an app that exited or is not ready again, no recovery.
 */
describe('fault suite, short profile', () => {
  it('loses, duplicates and crashes nothing under any fault', async () => {
    const report = await runFaultSuite({ CHAOS_PROFILE: 'short' });
    // Every contract event type was produced and checked, and every fault ran.
    for (const [type, n] of Object.entries(report.totals)) expect([type, n > 0]).toEqual([type, true]);
    expect(report.rows.length).toBeGreaterThanOrEqual(15);
    expect(breachedRows(report)).toEqual([]);
    expect(report.unexpectedExits).toEqual([]);
  }, 1_800_000);
});
