import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { CHECK_NAMES, DLQ_RUNBOOK, evaluateStatus, type StatusFacts } from '../../apps/reconciler/src';
import { anchor, composeStatus } from './status';

/**
 * docs/RUNBOOK.md has a section for every alert (its runbook_url) and every `ops status` check
 * (their `runbook` field), and every in-page link points at a section that exists.
 */
const text = readFileSync(path.resolve(__dirname, '../../docs/RUNBOOK.md'), 'utf8');
const headings = [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1].trim());
const anchors = new Set(headings.map((h) => anchor(h).split('#')[1]));

/**
 * Every alert of the Prometheus rule files (infra/prometheus/rules/*.rules.yml), with the
 * runbook_url it carries: a new alert is in this list the moment it is written.
 */
const RULES_DIR = path.resolve(__dirname, '../../infra/prometheus/rules');
const ALERTS: Array<{ alert: string; runbookUrl: string | undefined }> = readdirSync(RULES_DIR)
  .filter((f) => f.endsWith('.rules.yml'))
  .flatMap(
    (f) =>
      (
        parse(readFileSync(path.join(RULES_DIR, f), 'utf8')) as {
          groups: Array<{ rules: Array<{ alert?: string; annotations?: { runbook_url?: string } }> }>;
        }
      ).groups,
  )
  .flatMap((g) => g.rules)
  .filter((r): r is { alert: string; annotations?: { runbook_url?: string } } => typeof r.alert === 'string')
  .map((r) => ({ alert: r.alert, runbookUrl: r.annotations?.runbook_url }));

/**
 * Every check `ops status` can print, with the runbook it names, taken from the definitions
 * themselves: the reconciler's checklist (evaluateStatus always reports every check, healthy or
 * not), the DLQ console's check, and the lines `ops status` adds when a part cannot be read.
 */
const facts: StatusFacts = {
  now: new Date(),
  startedAt: new Date(),
  workQueues: [],
  queues: [],
  watchdog: [],
  stuck: { outboxUnsent: 0, outboxLagSeconds: 0, outboxProducers: [], emailLeasesExpired: 0, fanoutChunks: 0 },
  lastRecount: null,
  lastRuns: [],
  jobIntervalsMs: {},
  breakers: [],
  thresholds: { fanoutAfterMs: 1, backlogMax: 1, oldestMessageMaxMs: 1, outboxLagMaxMs: 1 },
  lostWork: { ok: true, queues: [], detail: '' },
};
const dlqCheck = { name: 'dlq', ok: true, value: 0, threshold: 0, runbook: DLQ_RUNBOOK };
const CHECKS: Array<{ name: string; runbook: string | undefined }> = [
  ...composeStatus(evaluateStatus(facts), { queues: [], totalPending: 0, topCauses: [], check: dlqCheck }).checks,
  ...composeStatus(new Error('unreachable'), new Error('unreachable')).checks,
]
  .map((c) => ({ name: c.name, runbook: c.runbook }))
  .filter((c, i, all) => all.findIndex((x) => x.name === c.name) === i);

describe('docs/RUNBOOK.md', () => {
  it('finds every alert and every check (the lists are read, not written here)', () => {
    expect(ALERTS.length).toBeGreaterThanOrEqual(17);
    expect(CHECKS.map((c) => c.name)).toEqual(expect.arrayContaining([...CHECK_NAMES, 'dlq', 'reconciler-status']));
  });

  it.each(ALERTS)('has a section for the alert $alert, where its runbook_url points', ({ alert, runbookUrl }) => {
    expect(headings).toContain(alert);
    expect(anchors).toContain(alert.toLowerCase());
    expect(runbookUrl).toBe(anchor(alert));
  });

  it.each(CHECKS)('has a section for the status check $name, at the anchor the check names', ({ name, runbook }) => {
    expect(headings).toContain(`check: ${name}`);
    expect(runbook).toBe(anchor(`check: ${name}`));
  });

  it('says what it means, how to confirm and what to do in each section', () => {
    const sections = text
      .split(/^## /m)
      .slice(1)
      .filter((s) => !s.startsWith('Your tools'));
    for (const s of sections) {
      const name = s.split('\n')[0];
      expect([name, /\*\*Means\.\*\*/.test(s)]).toEqual([name, true]);
      expect([name, /\*\*(Confirm|Confirm \/ Do)\.\*\*/.test(s)]).toEqual([name, true]);
      expect([name, /\*\*(Do|Confirm \/ Do)\.\*\*/.test(s)]).toEqual([name, true]);
    }
  });

  it('links only to sections that exist', () => {
    const links = [...text.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(20);
    expect(links.filter((l) => !anchors.has(l))).toEqual([]);
  });
});
