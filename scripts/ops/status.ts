/**
 * `ops status`: the reconciler's checklist (GET /v1/admin/status: backlog, oldest-message,
 * consumers, stale-leases, counter-drift, outbox-lag, jobs, breakers) plus the DLQ line and top
 * causes from GET /v1/admin/dlq, as one list. Each failing line names its docs/RUNBOOK.md section.
 * A part that cannot be read is itself a failing line: the operator cannot call the system healthy.
 */
export interface Check {
  name: string;
  ok: boolean;
  value?: unknown;
  threshold?: unknown;
  runbook?: string;
  detail?: string;
}

export interface DlqPart {
  queues: Array<{ queue: string; pending: number; oldestAgeSeconds: number | null; inBroker: number | null }>;
  totalPending: number;
  topCauses: Array<{
    count: number;
    errorClass: string;
    normalized: string;
    handler: string | null;
    messageType: string | null;
    queues: string[];
    fingerprint: string;
  }>;
  check: Check;
}

export interface StatusReport {
  ok: boolean;
  checks: Check[];
  dlq: DlqPart | null;
}

export const RUNBOOK = 'docs/RUNBOOK.md';
export const anchor = (section: string): string =>
  `${RUNBOOK}#${section
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replace(/ /g, '-')}`;

export function composeStatus(recon: { ok?: boolean; checks?: Check[] } | Error, dlq: DlqPart | Error): StatusReport {
  const checks: Check[] = [];
  if (recon instanceof Error) {
    checks.push({
      name: 'reconciler-status',
      ok: false,
      detail: recon.message,
      runbook: anchor('check: reconciler-status'),
    });
  } else {
    for (const c of recon.checks ?? []) checks.push({ ...c, runbook: c.runbook ?? anchor(`check: ${c.name}`) });
  }
  if (dlq instanceof Error) {
    checks.push({ name: 'dlq', ok: false, detail: dlq.message, runbook: anchor('check: dlq') });
  } else {
    const worst = [...dlq.queues].filter((q) => q.pending > 0).sort((a, b) => b.pending - a.pending);
    checks.push({
      ...dlq.check,
      detail: worst.length
        ? worst.map((q) => `${q.queue} ${q.pending} (oldest ${age(q.oldestAgeSeconds)})`).join(', ')
        : undefined,
    });
  }
  return { ok: checks.every((c) => c.ok), checks, dlq: dlq instanceof Error ? null : dlq };
}

export function age(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}

/** Scalars only: structured values (per-queue maps, job lists) are in `detail` for people and in --json for machines. */
const show = (v: unknown): string => (v === undefined || v === null || typeof v === 'object' ? '' : String(v));

export function renderStatus(report: StatusReport): string {
  const width = Math.max(...report.checks.map((c) => c.name.length), 10);
  const lines: string[] = [];
  for (const c of report.checks) {
    const value = [show(c.value), show(c.threshold) === '' ? '' : `(threshold ${show(c.threshold)})`]
      .filter(Boolean)
      .join(' ');
    let line = `${c.ok ? 'OK  ' : 'FAIL'}  ${c.name.padEnd(width)}  ${value}`.trimEnd();
    if (c.detail) line += ` — ${c.detail}`;
    if (!c.ok) line += `  → see ${c.runbook ?? anchor(`check: ${c.name}`)}`;
    lines.push(line.trimEnd());
  }
  if (report.dlq && report.dlq.topCauses.length > 0) {
    lines.push('', 'Top DLQ causes (ops dlq list --group <fingerprint>):');
    for (const g of report.dlq.topCauses) {
      lines.push(
        `  ${String(g.count).padStart(5)}× ${g.errorClass}: ${g.normalized}  [${g.handler ?? '?'} / ${g.messageType ?? '?'}] ${g.queues.join(', ')}  ${g.fingerprint}`,
      );
    }
  }
  lines.push('', report.ok ? 'All checks pass.' : `${report.checks.filter((c) => !c.ok).length} check(s) failing.`);
  return lines.join('\n');
}
