import { breachedRows, runFaultSuite } from './chaos/spawn-suite';

/**
 * The cluster fault suite's short profile (e2e/chaos/run.ts with CHAOS_SUITE=cluster,
 * CHAOS_PROFILE=short; docs/TESTING.md "Cluster fault suite"): a 3-node RabbitMQ cluster of its own
 * behind haproxy, its own Postgres and Redis, the five apps under the chaos suite's load; the
 * critical queue's leader killed with SIGKILL and restarted, then that queue deleted under its
 * consumer and declared again. `npm test` runs it in its last phase, beside the disruptive run (it
 * touches nothing shared). The full profile (`npm run test:cluster`) adds the rolling restart and
 * the URL-list access.
 */
describe('cluster fault suite, short profile', () => {
  it('loses, duplicates and crashes nothing when a node dies or a queue is re-created, and spreads the leaders', async () => {
    const report = await runFaultSuite({ CHAOS_SUITE: 'cluster', CHAOS_PROFILE: 'short', CLUSTER_ACCESS: 'haproxy' });
    for (const [type, n] of Object.entries(report.totals)) expect([type, n > 0]).toEqual([type, true]);
    expect(report.rows.map((r) => r.fault)).toEqual([
      expect.stringMatching(/^SIGKILL the leader/),
      expect.stringMatching(/^delete and re-declare/),
    ]);
    expect(breachedRows(report)).toEqual([]);
    expect(report.unexpectedExits).toEqual([]);
    // Leaders on every node, after the definitions import and after the apps' own declarations.
    expect(report.setupBreaches).toEqual([]);
    for (const vhost of ['community', '/']) expect(Object.keys(report.leaders?.[vhost] ?? {})).toHaveLength(3);
  }, 1_200_000);
});
