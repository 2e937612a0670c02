// The operators' CLI: `npm run ops -- <command>` (docs/RUNBOOK.md). Every command is a call to the
// reconciler's admin HTTP API; nothing here touches the database or the broker directly, so the CLI
// does exactly what the console does, with the same checks and the same audit trail.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { ApiError, clientConfig, createClient, operatorKeygen, operatorToken, UsageError, type Client } from './client';
import { age, composeStatus, renderStatus, type DlqPart } from './status';
import { terminalBlock, terminalText as t } from './terminal';
import { isLostWorkKind, redriveCommand, renderLostWork, renderRedrive } from './redrive';
import type { LostWorkVerdict } from '../../apps/reconciler/src';

const USAGE = `usage: npm run ops -- <command> [options]   (add --json for machine-readable output)

  status                                 the operational checklist; exit 1 when a check fails
  dlq summary                            every DLQ: pending, oldest, causes
  dlq groups [filter]                    causes with counts, first and last time
  dlq list [filter] [--limit N] [--cursor C]
  dlq show <id>                          payload, error, headers, attempts, original queue, history
  dlq replay (<ids…> | [filter]) [--rate N] [--yes]
  dlq discard (<ids…> | [filter]) [--yes] [--all]
        without --yes: a dry run (what and how many); with --yes: the dry run, then the action on
        exactly what the dry run matched, then its progress until done. One discard takes at most
        1000 messages (the reconciler's bound); beyond, --all sends the dry run's count back as
        the expected count, and the reconciler refuses if the selection no longer has exactly that
  dlq restore (<ids…> | [filter]) [--yes]
        undoes a discard (back to pending) within the restore window (DLQ_RETENTION_DAYS);
        a filter selects among discarded messages
  dlq operation <id>                     progress of a replay or discard
  recount [--user U] [--dry-run]         recount unread counters (all recently changed users, or one)
  feed rebuild (--user U | --all) [--dry-run]
  jobs                                   the last run of each scheduled job
  jobs run <job> [--dry-run]
  why --user U (--event E | --comment C | --key K)
  lost-work                              due work no queue holds (the status line, with counts per queue)
  <kind> redrive --since <iso> [--until <iso>] [--limit N] [--apply]
        re-publish the due work of one kind from the database to the queue that should hold it:
        event | email | digest | email-lease | fanout-chunk (docs/RUNBOOK.md "Someone purged a
        queue"). Without --apply: a dry run (what and how many); consumers deduplicate, so a row
        whose message was not lost after all is harmless
  user erase <userId> [--key K]          erase a user's personal data in every service, audited with
        your operator name; prints the audit id. --key: the request's idempotency key (default: a
        new one, printed); the same key again returns the same erasure and erases nothing twice
  user erase --status <erasureId>        published yet, and which services have erased
  token [--audience <service>]           print an admin token (for the console page at /console;
                                         default audience reconciler)
  keygen --operator <name> --out <file> [--kid <kid>]
        a new admin key pair for you: the private key into <file> (mode 600, never overwritten),
        and the entry to add to the services' ADMIN_KEYS (docs/DEPLOY.md "Admin keys")

  filter: --queue <dlq> --original-queue <queue> --group <fingerprint> --q <text> --error-class <c>
          --type <message type> --state pending|replayed|discarded|replaying --since <iso> --until <iso>

environment: RECONCILER_URL (default http://127.0.0.1:3004); OPS_ADMIN_KEY_FILE and OPS_ADMIN_KEY_ID
             (your own key and its kid: the audit records the operator ADMIN_KEYS binds to that
             kid), or OPS_TOKEN; outside NODE_ENV=production, by default the development operator`;

const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  yes: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  apply: { type: 'boolean' },
  all: { type: 'boolean' },
  user: { type: 'string' },
  event: { type: 'string' },
  comment: { type: 'string' },
  key: { type: 'string' },
  queue: { type: 'string' },
  'original-queue': { type: 'string' },
  group: { type: 'string' },
  q: { type: 'string' },
  'error-class': { type: 'string' },
  type: { type: 'string' },
  state: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  rate: { type: 'string' },
  operator: { type: 'string' },
  kid: { type: 'string' },
  out: { type: 'string' },
  audience: { type: 'string' },
  status: { type: 'string' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

interface Io {
  out(text: string): void;
  err(text: string): void;
}

function filterOf(v: Values): Record<string, string> {
  const pairs: Array<[string, string | undefined]> = [
    ['queue', v.queue],
    ['originalQueue', v['original-queue']],
    ['group', v.group],
    ['q', v.q],
    ['errorClass', v['error-class']],
    ['messageType', v.type],
    ['state', v.state],
    ['since', v.since],
    ['until', v.until],
  ];
  return Object.fromEntries(pairs.filter((p): p is [string, string] => p[1] !== undefined && p[1] !== ''));
}

const qs = (params: Record<string, string | undefined>): string => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? `?${s}` : '';
};

const when = (iso: string | null | undefined): string => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—');

/**
 * `ops dlq show`: one dead letter. Everything in it but the ids the console assigned came from the
 * message's publisher or the failing handler, so every field is printed through terminalText (one
 * line, control characters escaped) and the pretty-printed payload and headers through terminalBlock.
 */
export function renderDlqMessage(m: Record<string, unknown>): string {
  const history = (m.history as Array<Record<string, string>> | undefined) ?? [];
  return [
    `#${t(m.id)} message ${t(m.messageId)} (${t(m.messageType ?? '?')}) — ${t(m.state)}, replayed ${t(m.replayCount)} time(s)`,
    `original queue ${t(m.originalQueue)}, DLQ ${t(m.queue)}, handler ${t(m.handler ?? '?')}, ${t(m.attempts)} attempt(s), dead-lettered ${t(when(m.deadLetteredAt as string))}`,
    `error: ${t(m.errorClass)} (${t(m.errorKind)}): ${t(m.errorMessage)}`,
    ...(m.discardedAt
      ? [
          `discarded by ${t(m.discardedBy)} at ${t(when(m.discardedAt as string))}; restorable until ${t(when(m.restorableUntil as string))}`,
        ]
      : []),
    'payload:',
    m.bodyJson ? terminalBlock(JSON.stringify(m.bodyJson, null, 2)) : t(m.body),
    'headers:',
    terminalBlock(JSON.stringify(m.headers, null, 2)),
    'history:',
    ...(history.length
      ? history.map(
          (h) =>
            `  #${t(h.operationId)} ${t(h.action)} by ${t(h.requestedBy)}: ${t(h.result)}${h.detail ? ` (${t(h.detail)})` : ''} ${t(when(h.at))}`,
        )
      : ['  none']),
  ].join('\n');
}

/** Generic human rendering for the recon endpoints whose shape this CLI does not own. */
function renderGeneric(value: unknown, indent = ''): string {
  if (value === null || typeof value !== 'object') return `${indent}${String(value)}`;
  if (Array.isArray(value))
    return value
      .map((v) =>
        typeof v === 'object' && v !== null
          ? `${indent}-\n${renderGeneric(v, `${indent}  `)}`
          : `${indent}- ${String(v)}`,
      )
      .join('\n');
  return Object.entries(value as Record<string, unknown>)
    .map(([k, v]) =>
      typeof v === 'object' && v !== null
        ? `${indent}${k}:\n${renderGeneric(v, `${indent}  `)}`
        : `${indent}${k}: ${String(v)}`,
    )
    .join('\n');
}

interface FeedRebuildAnswer {
  dryRun: boolean;
  checked: number;
  mismatched: number;
  rebuilt: number;
  feeds: Array<{
    userId: string;
    missing: Array<{ postId: string }>;
    extra: Array<{ postId: string }>;
    rebuilt: boolean;
  }>;
}

/** `ops feed rebuild`: the counts, then each feed that differed (or was rebuilt) with what differed. */
export function renderFeedRebuild(r: FeedRebuildAnswer): string {
  const ids = (xs: Array<{ postId: string }>) =>
    xs.length
      ? ` (${xs
          .slice(0, 5)
          .map((x) => x.postId)
          .join(', ')}${xs.length > 5 ? ', …' : ''})`
      : '';
  const head = `${r.dryRun ? 'dry run: ' : ''}${r.checked} feeds checked, ${r.mismatched} differ, ${r.rebuilt} rebuilt`;
  const lines = r.feeds.map(
    (f) =>
      `  ${f.userId}: ${f.missing.length} missing${ids(f.missing)}, ${f.extra.length} extra${ids(f.extra)}${f.rebuilt ? ' → rebuilt' : ''}`,
  );
  const more = r.feeds.length < Math.max(r.mismatched, r.rebuilt) ? [`  … (${r.feeds.length} shown)`] : [];
  return [
    head,
    ...lines,
    ...more,
    ...(r.dryRun && r.mismatched > 0 ? ['run again without --dry-run to rebuild'] : []),
  ].join('\n');
}

interface Preview {
  matched: number;
  /** discard only: the bound of one call, and whether this selection exceeds it. */
  maxPerCall?: number;
  needsAll?: boolean;
  asOf: string | null;
  byQueue: Array<{ originalQueue: string; count: number }>;
  byGroup: Array<{ fingerprint: string; errorClass: string; count: number }>;
  sample: Array<{ id: string; messageId: string; originalQueue: string; errorClass: string; errorMessage: string }>;
  /** replay only: causes a replay does not remove (docs/DLQ-CONSOLE.md "Replay"). */
  warnings?: Array<{ permanence: string; count: number; message: string }>;
}

interface Operation {
  id: string;
  action: string;
  state: string;
  matched: number;
  succeeded: number;
  failed: number;
  skipped: number;
  error: string | null;
}

async function dlqAction(
  client: Client,
  io: Io,
  action: 'replay' | 'discard' | 'restore',
  v: Values,
  ids: string[],
): Promise<number> {
  const rate = v.rate === undefined ? undefined : Number(v.rate);
  if (rate !== undefined && (!Number.isInteger(rate) || rate < 1))
    throw new UsageError('--rate must be a positive integer (messages per second)');
  const selection = ids.length > 0 ? { ids } : { filter: filterOf(v) };
  const extra = action === 'replay' && rate !== undefined ? { ratePerSecond: rate } : {};
  const preview = await client.post<Preview>(`/v1/admin/dlq/${action}`, { ...selection, dryRun: true, ...extra });
  if (v.json && !v.yes) {
    io.out(terminalBlock(JSON.stringify(preview, null, 2)));
    return 0;
  }
  if (!v.json) {
    io.out(`Dry run: ${action} would act on ${preview.matched} message(s).`);
    for (const q of preview.byQueue) io.out(`  ${String(q.count).padStart(5)} → ${q.originalQueue}`);
    for (const g of preview.byGroup)
      io.out(`  ${String(g.count).padStart(5)}× ${t(g.errorClass)} (${t(g.fingerprint)})`);
    for (const m of preview.sample.slice(0, 5))
      io.out(`  e.g. #${t(m.id)} ${t(m.messageId)}: ${t(m.errorClass)}: ${t(m.errorMessage.slice(0, 100))}`);
    for (const w of preview.warnings ?? [])
      io.out(`${w.permanence === 'fails-again' ? 'Will fail again' : 'Likely to fail again'}: ${t(w.message)}`);
  }
  const beyondBound = action === 'discard' && preview.needsAll === true;
  if (!v.yes) {
    if (beyondBound && !v.json)
      io.out(
        `That is more than the ${preview.maxPerCall} messages one discard may take: narrow the filter, or add --all (with --yes) to discard exactly these ${preview.matched}.`,
      );
    io.out(preview.matched > 0 ? 'Nothing changed. Run the same command with --yes to do it.' : 'Nothing to do.');
    return 0;
  }
  if (beyondBound && !v.all) {
    io.err(
      `refused: ${preview.matched} messages is more than the ${preview.maxPerCall} one discard may take; narrow the filter, or add --all to discard exactly these ${preview.matched}`,
    );
    return 1;
  }
  if (preview.matched === 0) {
    if (v.json) io.out(terminalBlock(JSON.stringify({ preview, operation: null }, null, 2)));
    else io.out('Nothing to do.');
    return 0;
  }
  // Exactly what the dry run matched: the same filter, pinned to the highest id it saw.
  const pinned = 'filter' in selection ? { filter: { ...selection.filter, asOf: preview.asOf ?? '0' } } : selection;
  // --all: the dry run's count goes back as the count expected; the reconciler refuses any other.
  const bulk = action === 'discard' && v.all ? { all: true, expectedCount: preview.matched } : {};
  const started = await client.post<{ operationId: string; matched: number }>(`/v1/admin/dlq/${action}`, {
    ...pinned,
    dryRun: false,
    ...extra,
    ...bulk,
  });
  let op: Operation;
  for (;;) {
    op = await client.get<Operation>(`/v1/admin/dlq/operations/${started.operationId}`);
    const done = op.succeeded + op.failed + op.skipped;
    if (!v.json)
      io.out(
        `operation #${op.id} ${op.action}: ${op.state} ${done}/${op.matched} (${op.succeeded} ok, ${op.failed} failed, ${op.skipped} skipped)${op.error ? ` — ${op.error}` : ''}`,
      );
    if (op.state !== 'running') break;
    await sleep(1000);
  }
  if (v.json) io.out(terminalBlock(JSON.stringify({ preview, operation: op }, null, 2)));
  return op.state === 'done' && op.failed === 0 ? 0 : 1;
}

interface ErasureAnswer {
  erasureId: string;
  userId: string;
  requestedBy: string;
  eventId: string;
  requestedAt: string;
  replayed?: boolean;
  consumers?: string[];
  publishedAt?: string | null;
  done?: boolean;
}

/**
 * `user erase <userId>`: one POST with an idempotency key (--key, or a new one), sent again once
 * with the same key when the first answer is lost (no connection, 5xx): the reconciler then returns
 * the same audit row instead of a second erasure. `--status <erasureId>`: its progress.
 */
async function userErase(client: Client, io: Io, v: Values, rest: string[]): Promise<number> {
  if (v.status !== undefined) {
    if (rest.length > 0) throw new UsageError('user erase --status <erasureId> takes no user id');
    const s = await client.get<ErasureAnswer & { consumers: Array<{ consumer: string; processedAt: string | null }> }>(
      `/v1/admin/erasures/${encodeURIComponent(v.status)}`,
    );
    const p = io.out;
    if (v.json) p(terminalBlock(JSON.stringify(s, null, 2)));
    else {
      p(
        `erasure #${t(s.erasureId)} of user ${t(s.userId)}, requested by ${t(s.requestedBy)} at ${when(s.requestedAt)}`,
      );
      p(
        `user.erased ${t(s.eventId)}: ${s.publishedAt ? `published ${when(s.publishedAt)}` : "not published yet (in the reconciler's outbox)"}`,
      );
      for (const c of s.consumers)
        p(`  ${t(c.consumer).padEnd(32)} ${c.processedAt ? `erased ${when(c.processedAt)}` : 'pending'}`);
      p(s.done ? 'done: every service has erased the user.' : 'not done yet.');
    }
    return s.done ? 0 : 1;
  }
  if (rest.length !== 1 || !rest[0])
    throw new UsageError('user erase <userId> [--key K]   or   user erase --status <erasureId>');
  const userId = rest[0];
  const key = v.key ?? randomUUID();
  const path = `/v1/admin/users/${encodeURIComponent(userId)}/erasure`;
  const send = () => client.post<ErasureAnswer>(path, {}, { 'idempotency-key': key });
  let answer: ErasureAnswer;
  try {
    answer = await send();
  } catch (err) {
    if (!(err instanceof ApiError) || (err.status !== 0 && err.status < 500)) throw err;
    answer = await send();
  }
  if (v.json) {
    io.out(terminalBlock(JSON.stringify({ ...answer, idempotencyKey: key }, null, 2)));
    return 0;
  }
  io.out(
    `${answer.replayed ? 'Already requested' : 'Requested'}: erasure of user ${t(answer.userId)} (${(answer.consumers ?? []).map(t).join(', ')})`,
  );
  io.out(
    `audit id ${t(answer.erasureId)}, requested by ${t(answer.requestedBy)} at ${when(answer.requestedAt)}, event ${t(answer.eventId)}, key ${t(key)}`,
  );
  io.out(`progress: npm run ops -- user erase --status ${t(answer.erasureId)}`);
  return 0;
}

/** `keygen`: needs no reconciler and no key of its own, so it runs before any client is configured. */
function keygen(v: Values, io: Io): number {
  if (!v.operator || !v.out) throw new UsageError('keygen --operator <name> --out <file> [--kid <kid>]');
  const kid =
    v.kid ?? `${v.operator.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 48)}-${new Date().toISOString().slice(0, 10)}`;
  const { privateKeyPem, entry } = operatorKeygen(v.operator, kid);
  try {
    // 'wx': an existing key is never overwritten (it may be the one the services trust today).
    writeFileSync(v.out, privateKeyPem, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    throw new UsageError(
      `keygen: cannot write ${v.out} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  if (v.json) {
    io.out(JSON.stringify({ kid, operator: v.operator, keyFile: v.out, entry: JSON.parse(entry) as unknown }, null, 2));
    return 0;
  }
  io.out(`private key written to ${v.out} (keep it to yourself; no service ever needs it)`);
  io.out('add this entry to ADMIN_KEYS (a JSON array) of every service, then deploy:');
  io.out(`  ${entry}`);
  io.out('and sign your admin tokens with it:');
  io.out(`  export OPS_ADMIN_KEY_FILE=${v.out} OPS_ADMIN_KEY_ID=${kid}`);
  return 0;
}

export async function main(argv: string[], io: Io, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const v = parsed.values;
  const [cmd, sub, ...rest] = parsed.positionals;
  if (v.help || !cmd) {
    io.out(USAGE);
    return cmd || v.help ? 0 : 2;
  }
  // --json too: JSON.stringify leaves C1 controls and bidi overrides raw, terminalBlock escapes them.
  const print = (value: unknown, human: () => string) =>
    io.out(v.json ? terminalBlock(JSON.stringify(value, null, 2)) : human());
  try {
    if (cmd === 'keygen') return keygen(v, io);
    if (cmd === 'token' && v.audience && !env.OPS_TOKEN) {
      io.out(operatorToken(env, v.audience).token);
      return 0;
    }
    const config = clientConfig(env);
    const client = createClient(config);
    switch (cmd) {
      case 'token':
        io.out(config.token);
        return 0;
      case 'status': {
        const [recon, dlq] = await Promise.all([
          client.get<{ ok: boolean; checks: [] }>('/v1/admin/status').catch((e: Error) => e),
          client.get<DlqPart>('/v1/admin/dlq').catch((e: Error) => e),
        ]);
        const report = composeStatus(recon, dlq);
        print(report, () => renderStatus(report));
        return report.ok ? 0 : 1;
      }
      case 'dlq': {
        switch (sub) {
          case 'summary': {
            const s = await client.get<DlqPart>('/v1/admin/dlq');
            print(s, () =>
              [
                'DLQ                                           pending  oldest    not yet read',
                ...s.queues.map(
                  (q) =>
                    `${q.queue.padEnd(45)} ${String(q.pending).padStart(7)}  ${age(q.oldestAgeSeconds).padEnd(8)}  ${q.inBroker ?? '?'}`,
                ),
              ].join('\n'),
            );
            return 0;
          }
          case 'groups': {
            const { groups } = await client.get<{
              groups: Array<DlqPart['topCauses'][number] & { firstSeen: string; lastSeen: string }>;
            }>(`/v1/admin/dlq/groups${qs(filterOf(v))}`);
            print({ groups }, () =>
              groups.length === 0
                ? 'No dead letters match.'
                : groups
                    .map(
                      (g) =>
                        `${String(g.count).padStart(5)}× ${t(g.errorClass)}: ${t(g.normalized)}\n       ${t(g.fingerprint)}  ${t(g.handler ?? '?')} / ${t(g.messageType ?? '?')}  first ${when(g.firstSeen)}  last ${when(g.lastSeen)}  ${t(g.queues.join(', '))}`,
                    )
                    .join('\n'),
            );
            return 0;
          }
          case 'list': {
            const page = await client.get<{
              items: Array<Record<string, string>>;
              total: number;
              nextCursor: string | null;
            }>(`/v1/admin/dlq/messages${qs({ ...filterOf(v), limit: v.limit, cursor: v.cursor })}`);
            print(page, () =>
              [
                `${page.total} message(s) match.`,
                ...page.items.map(
                  (m) =>
                    `#${String(m.id).padEnd(6)} ${when(m.deadLetteredAt)}  ${t(m.originalQueue)}  ${t(m.messageType ?? '?')}  ${t(m.state)}  ${t(m.errorClass)}: ${t(String(m.errorMessage).slice(0, 120))}`,
                ),
                ...(page.nextCursor ? [`more: --cursor ${page.nextCursor}`] : []),
              ].join('\n'),
            );
            return 0;
          }
          case 'show': {
            if (!rest[0]) throw new UsageError('dlq show <id>');
            const m = await client.get<Record<string, unknown>>(
              `/v1/admin/dlq/messages/${encodeURIComponent(rest[0])}`,
            );
            print(m, () => renderDlqMessage(m));
            return 0;
          }
          case 'replay':
          case 'discard':
          case 'restore':
            return await dlqAction(client, io, sub, v, rest);
          case 'operation': {
            if (!rest[0]) throw new UsageError('dlq operation <id>');
            const op = await client.get<Operation>(`/v1/admin/dlq/operations/${encodeURIComponent(rest[0])}`);
            print(op, () => renderGeneric(op));
            return 0;
          }
          default:
            throw new UsageError(
              `unknown dlq command '${sub ?? ''}' (summary, groups, list, show, replay, discard, restore, operation)`,
            );
        }
      }
      case 'recount': {
        const r = await client.post('/v1/admin/recount', {
          ...(v.user ? { userId: v.user } : {}),
          dryRun: v['dry-run'] ?? false,
        });
        print(r, () => renderGeneric(r));
        return 0;
      }
      case 'feed': {
        if (sub !== 'rebuild') throw new UsageError('feed rebuild (--user U | --all) [--dry-run]');
        if (!v.user === !v.all) throw new UsageError('feed rebuild needs exactly one of --user U or --all');
        const r = await client.post<FeedRebuildAnswer>('/v1/admin/feeds/rebuild', {
          ...(v.user ? { userId: v.user } : { all: true }),
          dryRun: v['dry-run'] ?? false,
        });
        print(r, () => renderFeedRebuild(r));
        return 0;
      }
      case 'jobs': {
        if (sub === 'run') {
          if (!rest[0]) throw new UsageError('jobs run <job> [--dry-run]');
          const r = await client.post(
            `/v1/admin/jobs/${encodeURIComponent(rest[0])}/run?dryRun=${v['dry-run'] ? 'true' : 'false'}`,
            {},
          );
          print(r, () => renderGeneric(r));
          return 0;
        }
        const r = await client.get('/v1/admin/jobs');
        print(r, () => renderGeneric(r));
        return 0;
      }
      case 'why': {
        const keys = [v.event, v.comment, v.key].filter(Boolean).length;
        if (!v.user || keys !== 1)
          throw new UsageError('why --user U and exactly one of --event E, --comment C, --key K');
        const r = await client.get(
          `/v1/admin/why${qs({ userId: v.user, eventId: v.event, commentId: v.comment, idempotencyKey: v.key })}`,
        );
        print(r, () => renderGeneric(r));
        return 0;
      }
      case 'user': {
        if (sub !== 'erase') throw new UsageError('unknown user command (erase)');
        return await userErase(client, io, v, rest);
      }
      case 'lost-work': {
        const r = await client.get<LostWorkVerdict>('/v1/admin/lost-work');
        print(r, () => renderLostWork(r));
        return r.ok ? 0 : 1;
      }
      default: {
        if (isLostWorkKind(cmd)) {
          const r = await redriveCommand(client, cmd, sub, v);
          print(r, () => renderRedrive(r));
          return 0;
        }
        throw new UsageError(`unknown command '${cmd}'`);
      }
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${err.message}\n\n${USAGE}`);
      return 2;
    }
    if (err instanceof ApiError) {
      io.err(
        v.json
          ? terminalBlock(JSON.stringify({ error: err.message, status: err.status, body: err.body }))
          : `error: ${t(err.message)}`,
      );
      return 1;
    }
    throw err;
  }
}

if (require.main === module) {
  main(process.argv.slice(2), {
    out: (t) => process.stdout.write(`${t}\n`),
    err: (t) => process.stderr.write(`${t}\n`),
  }).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`ops: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
