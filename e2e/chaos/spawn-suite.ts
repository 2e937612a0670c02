import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Runs the fault suite (e2e/chaos/run.ts) as a child process, as the short-profile tests of
 * `npm test` do (e2e/chaos.isolated.test.ts, e2e/cluster.cluster.test.ts), and returns its report.
 * Fails with the tail of its output when it exits non-zero (any invariant breach).
 */
export interface SuiteRow {
  fault: string;
  lost: number;
  duplicated: number;
  emailsMissing: number;
  emailsDuplicated: number;
  counterMismatches: number;
  feedCountersOff: number;
  exits: number;
  notReady: string;
  faultBreaches: string[];
  dlqUnmatched: number;
  dlqWithoutReason: number;
}

export interface SuiteReport {
  totals: Record<string, number>;
  rows: SuiteRow[];
  unexpectedExits: string[];
  setupBreaches?: string[];
  leaders?: Record<string, Record<string, number>>;
}

const ROOT = path.resolve(__dirname, '../..');

export async function runFaultSuite(env: Record<string, string>): Promise<SuiteReport> {
  const report = path.join(tmpdir(), `fault-suite-${process.pid}-${Date.now()}.json`);
  try {
    const output: string[] = [];
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ['-r', '@swc-node/register', 'e2e/chaos/run.ts'], {
        cwd: ROOT,
        env: { ...process.env, ...env, CHAOS_REPORT: report },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.on('data', (c: Buffer) => output.push(c.toString()));
      child.stderr.on('data', (c: Buffer) => output.push(c.toString()));
      child.on('exit', (c) => resolve(c));
    });
    const log = output.join('');
    if (code !== 0) throw new Error(`the fault suite exited ${code}:\n${log.slice(-12_000)}`);
    return JSON.parse(await readFile(report, 'utf8')) as SuiteReport;
  } finally {
    await rm(report, { force: true });
  }
}

/** The rows that break an invariant (the suite's own exit code says so too; this names them). */
export function breachedRows(report: SuiteReport): SuiteRow[] {
  return report.rows.filter(
    (r) =>
      r.lost +
        r.duplicated +
        r.emailsMissing +
        r.emailsDuplicated +
        r.counterMismatches +
        r.feedCountersOff +
        r.exits +
        r.dlqUnmatched +
        r.dlqWithoutReason >
        0 ||
      r.notReady !== 'none' ||
      r.faultBreaches.length > 0,
  );
}
