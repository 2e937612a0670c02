import type { Figures } from './checks';

// One row per fault: what the checks found, the breaches it counts, and the table the run prints.

export interface Row extends Omit<Figures, 'events' | 'examples'> {
  fault: string;
  note: string;
  rounds: number;
  requests: number;
  refused: string;
  firstEffectMs: number;
  drainedMs: number;
  backlogMs: number;
  exits: number;
  notReady: string;
  faultBreaches: string[];
  ledgerEvents: number;
}

/** The invariants a row breaks (empty: it passes). */
export function breaches(r: Row): string[] {
  const out: string[] = [];
  if (r.lost > 0) out.push(`${r.lost} lost`);
  if (r.duplicated > 0) out.push(`${r.duplicated} duplicated`);
  if (r.dlqUnmatched > 0) out.push(`${r.dlqUnmatched} DLQ messages matching no ledger event`);
  if (r.dlqWithoutReason > 0) out.push(`${r.dlqWithoutReason} DLQ messages without a reason`);
  if (r.emailsMissing > 0) out.push(`${r.emailsMissing} emails missing`);
  if (r.emailsDuplicated > 0) out.push(`${r.emailsDuplicated} emails duplicated`);
  if (r.counterMismatches > 0) out.push(`${r.counterMismatches} counters off`);
  if (r.feedCountersOff > 0) out.push(`${r.feedCountersOff} feed counters off`);
  out.push(...r.faultBreaches);
  if (r.exits > 0) out.push(`${r.exits} unexpected exits`);
  if (r.notReady !== 'none') out.push(`not ready: ${r.notReady}`);
  if (!Number.isFinite(r.firstEffectMs)) out.push('no effect after the heal');
  if (!Number.isFinite(r.drainedMs)) out.push('did not drain');
  return out;
}

export function printTable(rows: Row[]): void {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  console.log(
    '\n| Fault | Rounds (requests; failed) | Ledger events, cumulative (effects checked) | Lost | In DLQ (DLQ msgs, unmatched) | Duplicated | Unledgered | Emails missing / dup / crash window | Counters off (unread / feed) | Exits | First effect after heal | Drained after heal | Drained after last request | Note |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.fault} | ${r.rounds} (${r.requests}; ${r.refused}) | ${r.ledgerEvents} (${r.effects}) | ${r.lost} | ${r.inDlq} (${r.dlq}, ${r.dlqUnmatched}) | ${r.duplicated} | ${r.unledgered} | ${r.emailsMissing} / ${r.emailsDuplicated} / ${r.emailsCrashWindow} | ${r.counterMismatches} / ${r.feedCountersOff} | ${r.exits} | ${s(r.firstEffectMs)} | ${s(r.drainedMs)} | ${s(r.backlogMs)} | ${r.note} |`,
    );
  }
}
