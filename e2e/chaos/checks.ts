import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import type { ReceivedMail } from '../harness';
import type { Ledger } from './load';

const run = promisify(execFile);

/** Every queue of the vhost with its depth (ready + unacked), from rabbitmqctl (exact, unlike the management stats). */
export async function queueDepths(vhost: string): Promise<Map<string, number>> {
  const { stdout } = await run('rabbitmqctl', ['list_queues', '-q', '--no-table-headers', '-p', vhost, 'name', 'messages'], { timeout: 60_000 });
  const depths = new Map<string, number>();
  for (const line of stdout.split('\n')) {
    const [name, n] = line.trim().split(/\s+/);
    if (name && n !== undefined) depths.set(name, Number(n));
  }
  return depths;
}

/** Outbox rows not yet relayed, and email deliveries not yet final. */
export async function pendingWork(db: pg.Pool): Promise<{ outbox: number; emails: number }> {
  const { rows } = await db.query<{ outbox: number; emails: number }>(`SELECT
      (SELECT count(*)::int FROM outbox_messages WHERE sent_at IS NULL) AS outbox,
      (SELECT count(*)::int FROM email_deliveries WHERE state IN ('pending', 'sending')) AS emails`);
  return rows[0];
}

export interface Figures {
  ledgerEvents: number;
  lost: number;
  duplicated: number;
  unledgered: number;
  dlq: number;
  emailsMissing: number;
  emailsDuplicated: number;
  emailsCrashWindow: number;
  counterMismatches: number;
}

/**
 * The invariants, over everything the ledger holds so far: each mention's notification present once
 * (the unique keys forbid two rows; counted anyway), each mentioned user's mailbox holding one email per
 * mention, and unread counters equal to a recount. A resend with the same Message-ID is the documented
 * crash window (SMTP 250 received, ledger not yet marked); any other extra email is a duplicate.
 */
export async function checkInvariants(db: pg.Pool, ledger: Ledger, mails: ReceivedMail[], dlq: number): Promise<Figures> {
  const { rows } = await db.query<{ resource_id: string; user_id: string; n: number }>(
    `SELECT resource_id, user_id, count(*)::int AS n FROM notification_items WHERE type = 'mention' GROUP BY resource_id, user_id`,
  );
  const present = new Map(rows.map((r) => [`${r.resource_id}/${r.user_id}`, r.n]));
  let lost = 0;
  let duplicated = 0;
  const expected = new Set<string>();
  for (const e of ledger.entries) {
    for (const u of e.mentioned) {
      const key = `${e.commentId}/${u}`;
      expected.add(key);
      const n = present.get(key) ?? 0;
      if (n === 0) lost++;
      if (n > 1) duplicated += n - 1;
    }
  }
  const unledgered = rows.filter((r) => !expected.has(`${r.resource_id}/${r.user_id}`)).length;

  const byRecipient = new Map<string, { ids: Set<string>; total: number }>();
  for (const m of mails) {
    for (const to of m.to) {
      const r = byRecipient.get(to) ?? { ids: new Set(), total: 0 };
      r.total++;
      r.ids.add(m.messageId ?? `none-${r.total}`);
      byRecipient.set(to, r);
    }
  }
  let emailsMissing = 0;
  let emailsDuplicated = 0;
  let emailsCrashWindow = 0;
  for (const [user, want] of ledger.perUser()) {
    const got = byRecipient.get(`${user}@example.test`) ?? { ids: new Set(), total: 0 };
    emailsCrashWindow += got.total - got.ids.size;
    if (got.ids.size < want) emailsMissing += want - got.ids.size;
    if (got.ids.size > want) emailsDuplicated += got.ids.size - want;
  }

  const counters = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM notification_counters c
     WHERE c.unread_count <> (SELECT count(*) FROM notification_items i WHERE i.user_id = c.user_id AND i.in_app AND i.read_at IS NULL)`);
  return {
    ledgerEvents: ledger.mentions,
    lost,
    duplicated,
    unledgered,
    dlq,
    emailsMissing,
    emailsDuplicated,
    emailsCrashWindow,
    counterMismatches: counters.rows[0].n,
  };
}
