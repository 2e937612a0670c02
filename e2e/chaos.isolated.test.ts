import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The fault suite's short profile (e2e/chaos/run.ts, CHAOS_PROFILE=short): every fault of
 * docs/RELIABILITY.md under load, on a RabbitMQ node, a Postgres cluster and a Redis of its own, so it
 * disturbs no other test: `npm test` runs it in the isolated run, beside the regular suite from its
 * start, so its length (five apps, three servers, a load) overlaps the rest. Fails on any invariant breach:
 * a lost or duplicated effect, a DLQ message without a reason or matching no ledger event, a missing
 * or duplicated email, a counter off, an app that exited or is not ready again, no recovery.
 */
const ROOT = path.resolve(__dirname, '..');
const REPORT = path.join(tmpdir(), `chaos-short-${process.pid}.json`);

interface Report {
  totals: Record<string, number>;
  rows: Array<{ fault: string; lost: number; duplicated: number; emailsMissing: number; emailsDuplicated: number; counterMismatches: number; feedCountersOff: number; exits: number; notReady: string; faultBreaches: string[]; dlqUnmatched: number; dlqWithoutReason: number }>;
  unexpectedExits: string[];
}


describe('fault suite, short profile', () => {
  afterAll(() => rm(REPORT, { force: true }));

  it('loses, duplicates and crashes nothing under any fault', async () => {
    const output: string[] = [];
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ['-r', '@swc-node/register', 'e2e/chaos/run.ts'], {
        cwd: ROOT,
        env: { ...process.env, CHAOS_PROFILE: 'short', CHAOS_REPORT: REPORT },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.on('data', (c: Buffer) => output.push(c.toString()));
      child.stderr.on('data', (c: Buffer) => output.push(c.toString()));
      child.on('exit', (c) => resolve(c));
    });
    const log = output.join('');
    if (code !== 0) throw new Error(`the fault suite exited ${code}:\n${log.slice(-12_000)}`);
    const report = JSON.parse(await readFile(REPORT, 'utf8')) as Report;
    // Every contract event type was produced and checked, and every fault ran.
    for (const [type, n] of Object.entries(report.totals)) expect([type, n > 0]).toEqual([type, true]);
    expect(report.rows.length).toBeGreaterThanOrEqual(15);
    const breaches = report.rows.filter((r) => r.lost + r.duplicated + r.emailsMissing + r.emailsDuplicated + r.counterMismatches + r.feedCountersOff + r.exits + r.dlqUnmatched + r.dlqWithoutReason > 0 || r.notReady !== 'none' || r.faultBreaches.length > 0);
    expect(breaches).toEqual([]);
    expect(report.unexpectedExits).toEqual([]);
  }, 1_800_000);
});
