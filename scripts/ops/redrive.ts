// `npm run ops -- <kind> redrive --since <iso> [--until <iso>] [--limit N] [--apply]` and
// `npm run ops -- lost-work`: the re-drive of work the database knows about whose message is gone
// (docs/RUNBOOK.md "Someone purged a queue"). A dry run unless --apply.
import {
  LOST_WORK_KINDS,
  type LostWorkKind,
  type LostWorkVerdict,
  type RedriveResult,
} from '../../apps/reconciler/src';
import { UsageError, type Client } from './client';
import { terminalText as t } from './terminal';

export const isLostWorkKind = (cmd: string): cmd is LostWorkKind =>
  (LOST_WORK_KINDS as readonly string[]).includes(cmd);

/** The reconciler's answer to POST /v1/admin/lost-work/:kind/redrive. */
export type RedriveAnswer = RedriveResult;

const n = (x: number) => x.toLocaleString('en-US');

export function renderRedrive(r: RedriveAnswer): string {
  const queues = [...new Set(r.sample.map((s) => s.queue))].join(', ') || 'its queue';
  const lines = [
    r.dryRun
      ? `DRY RUN: ${n(r.matched)} ${r.kind} row(s) due in [${r.since}, ${r.until}) would be re-published to ${queues}${r.skipped.length ? ` (${n(r.skipped.length)} cannot be: see below)` : ''}.`
      : `Re-published ${n(r.republished)} ${r.kind} message(s) to ${queues} (${n(r.matched)} row(s) due in [${r.since}, ${r.until})).`,
  ];
  if (r.matched > 0) lines.push(`  oldest ${r.oldest}, newest ${r.newest}`);
  for (const s of r.sample.slice(0, 5))
    lines.push(`  e.g. ${t(s.id)}${s.idempotencyKey ? ` (key ${t(s.idempotencyKey)})` : ''} at ${s.at}`);
  for (const s of r.skipped.slice(0, 10)) lines.push(`  not re-driven: ${t(s.id)}: ${t(s.reason)}`);
  if (r.more)
    lines.push(
      `More rows remain in the window: run again with --since ${r.newest} (a row re-driven twice is harmless: consumers deduplicate).`,
    );
  if (r.dryRun && r.matched > 0)
    lines.push('Nothing was published. Run the same command with --apply to re-drive them.');
  return lines.join('\n');
}

export function renderLostWork(v: LostWorkVerdict): string {
  return [
    `${v.ok ? 'OK  ' : 'FAIL'} lost-work: ${t(v.detail)}`,
    ...v.queues.map(
      (q) =>
        `  ${q.queue}: ${n(q.due)} due, ${n(q.held)} held, ${n(q.lost)} lost (${q.kinds.map((k) => `${k.kind} ${n(k.rows)}`).join(', ')})`,
    ),
  ].join('\n');
}

export async function redriveCommand(
  client: Client,
  kind: LostWorkKind,
  sub: string | undefined,
  v: { since?: string; until?: string; limit?: string; apply?: boolean },
): Promise<RedriveAnswer> {
  if (sub !== 'redrive') throw new UsageError(`${kind} redrive --since <iso> [--until <iso>] [--limit N] [--apply]`);
  if (!v.since)
    throw new UsageError(
      `${kind} redrive needs --since <iso time> (e.g. a minute before the purge); --until defaults to now`,
    );
  for (const [name, value] of [
    ['since', v.since],
    ['until', v.until],
  ] as const) {
    if (value !== undefined && Number.isNaN(Date.parse(value)))
      throw new UsageError(`--${name} '${value}' is not a time (ISO 8601, e.g. 2026-12-02T05:10:00Z)`);
  }
  const limit = v.limit === undefined ? undefined : Number(v.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1))
    throw new UsageError(`--limit '${v.limit}' is not a positive integer`);
  return client.post<RedriveAnswer>(`/v1/admin/lost-work/${kind}/redrive`, {
    since: new Date(v.since).toISOString(),
    ...(v.until ? { until: new Date(v.until).toISOString() } : {}),
    ...(limit !== undefined ? { limit } : {}),
    apply: v.apply === true,
  });
}
