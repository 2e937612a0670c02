import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import {
  onePerSlot,
  planNotifications,
  quietHoursEnd,
  type AnyEvent,
  type EventOf,
  type NotificationType,
  type QuietHours,
} from '@community/contracts';
import { classifyPgError, withTransaction } from '@community/db';
import {
  classify,
  HandlerTimeoutError,
  messageTraceContext,
  PermanentError,
  type BatchContext,
  type BatchHandler,
  type BatchItem,
  type Outcome,
} from '@community/messaging';
import { traceCarrier, type TraceCarrier } from '@community/outbox';
import { deliveryFor, effectivePreferences } from '../domain/preferences';
import type { NotificationMetrics } from '../metrics';
import { transactionBudgetMs } from '../queues';
import {
  claimAndLockInboxes,
  newestTimezones,
  upsertUsers,
  writeNotifications,
  type NotificationRow,
} from '../store/ingest';
import { applyItemDelta, refreshItems, type GroupRef } from '../store/items';
import { writtenBy } from '../store/emission';
import { notificationCreatedOf, type StoredNotification } from '../domain/notification-created';
import type { Emission, Emit } from './emit';
import { handleUserErased } from './user-erased';
import { handleRetraction } from './retraction';

export interface NotificationBatchDeps {
  pool: Pool;
  /** The inbox (processed_events) consumer name: the queue, so the two queues never share claims. */
  consumer: string;
  metrics: NotificationMetrics;
  /** The runtime's deadline for one batch (the consumer's timeoutMs); the transactions end before it. */
  batchTimeoutMs: number;
  /** "Now" for quiet hours: the instant a batch creates its notifications (default: the system clock). */
  clock?: () => Date;
  /** Publishes notification.created after the commit and resolves on the broker's confirms (handlers/emit.ts). */
  emit: Emit;
}

const HANDLED = new Set<AnyEvent['type']>([
  'user.upserted',
  'user.mentioned',
  'comment.created',
  'reaction.added',
  'user.followed',
  'security.alert',
]);

/** Handled in a transaction of their own each, in queue order (processBatch). */
const ON_THEIR_OWN = new Set<AnyEvent['type']>(['user.erased', 'comment.deleted', 'post.deleted', 'reaction.removed']);

/**
 * The consumers' batch handler (both queues): one transaction for the whole batch, two statements
 * for ungrouped notifications.
 *
 * 1. plan the notifications (pure; self-actions plan nothing);
 * 2. claim the event ids (processed_events: redelivered events are duplicates at once) + lock the
 *    recipients' counter rows, advance their inbox versions, read their preferences (one statement);
 * 3. user.upserted → the display-name projection (only when the batch has some);
 * 4. apply preferences to the fresh events' notifications, keep one per slot, decide each one's
 *    `quietUntil` (when it is created in the user's quiet hours);
 * 5. insert the notifications (a higher rank replaces a lower one of its slot) + move the counters
 *    + NOTIFY the SSE hubs (one statement), build the notification.created of every row written
 *    from what the row holds (a grouped or replaced row also refreshes its items); COMMIT;
 * 6. release the batch's lane (the next batch may start: this one holds no lock or connection any
 *    more), publish the notification.created of every row written and wait for the broker's
 *    confirms; a redelivered event (a duplicate in step 2) re-publishes the ones its first
 *    delivery wrote, read back from the rows. The runtime acks the messages only after this
 *    returns, so a crash anywhere before the ack redelivers them and step 6 runs again
 *    (docs/NOTIFICATIONS.md "Emission").
 *
 * A batch that fails with a permanent error (say one event whose text Postgres refuses) is rerun
 * one event per transaction, so only the culprit is dead-lettered and the rest commit.
 *
 * The deadline cancels the database work: every transaction of the batch gets a signal that aborts
 * a margin before the runtime's deadline (or at a forced shutdown: `ctx.signal`) and a statement
 * timeout for what is left. On abort the statement is cancelled and rolled back, nothing commits,
 * and the handler returns only once the transaction has ended: the message goes to a retry tier
 * while nothing of it runs any more, so no retry races a late commit and the consumers'
 * concurrency bound counts every transaction that runs.
 */
export function createNotificationBatchHandler(deps: NotificationBatchDeps): BatchHandler<AnyEvent> {
  return async (items: BatchItem<AnyEvent>[], ctx: BatchContext) => {
    const budgetMs = transactionBudgetMs(deps.batchTimeoutMs);
    const budget = new AbortController();
    const timer = setTimeout(() => budget.abort(new HandlerTimeoutError(budgetMs)), budgetMs);
    const deadline = { signal: AbortSignal.any([ctx.signal, budget.signal]), endsAt: Date.now() + budgetMs };
    try {
      const emissions: Emission[] = [];
      const results = await isolateOnPermanentFailure(deps, items, ctx, deadline, emissions);
      // Committed. The lane is free for the next batch (its locks and its connection are released):
      // this one only waits for the broker now. Then announce, and return (so the runtime acks)
      // only once the broker confirmed every message.
      ctx.release?.();
      await deps.emit(emissions);
      return results;
    } finally {
      clearTimeout(timer);
    }
  };
}

interface BatchDeadline {
  signal: AbortSignal;
  /** Date.now() at which the signal aborts (absent a forced shutdown). */
  endsAt: number;
}

async function isolateOnPermanentFailure(
  deps: NotificationBatchDeps,
  items: BatchItem<AnyEvent>[],
  ctx: BatchContext,
  deadline: BatchDeadline,
  emissions: Emission[],
): Promise<Array<Outcome | Error>> {
  try {
    return await processBatch(deps, items, deadline, emissions);
  } catch (err) {
    if (classify(err, [classifyPgError]) !== 'permanent') throw err; // the whole batch goes to a retry tier
    if (items.length === 1) throw describeFailure(err);
    ctx.logger.warn({ err, size: items.length }, 'batch failed permanently; isolating the failing events one by one');
    const results: Array<Outcome | Error> = [];
    for (const item of items) {
      try {
        results.push((await processBatch(deps, [item], deadline, emissions))[0]);
      } catch (itemErr) {
        results.push(describeFailure(itemErr));
      }
    }
    return results;
  }
}

/**
 * pg's errors are all named 'error': dead-letter headers would say nothing. A permanent database
 * refusal becomes a PermanentError that names the SQLSTATE and PostgreSQL's reason.
 */
function describeFailure(err: unknown): Error {
  const code = (err as { code?: unknown }).code;
  if (
    err instanceof Error &&
    typeof code === 'string' &&
    /^[0-9A-Z]{5}$/.test(code) &&
    classify(err, [classifyPgError]) === 'permanent'
  ) {
    return new PermanentError(
      `PostgreSQL refused this event's data (SQLSTATE ${code}): ${err.message}`,
      'DATABASE_REFUSED',
      { cause: err },
    );
  }
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * user.erased (handlers/user-erased.ts) and the retractions (handlers/retraction.ts) run in a
 * transaction of their own each, in queue order: the events before one in the batch are committed
 * first (so their notifications are erased or withdrawn too), those after it once it has committed.
 */
async function processBatch(
  deps: NotificationBatchDeps,
  items: BatchItem<AnyEvent>[],
  deadline: BatchDeadline,
  emissions: Emission[],
): Promise<Array<Outcome | Error>> {
  if (!items.some(({ event }) => ON_THEIR_OWN.has(event.type))) return processEvents(deps, items, deadline, emissions);
  const results: Array<Outcome | Error> = [];
  let run: BatchItem<AnyEvent>[] = [];
  const flush = async () => {
    if (run.length) results.push(...(await processEvents(deps, run, deadline, emissions)));
    run = [];
  };
  for (const item of items) {
    const { event } = item;
    if (!ON_THEIR_OWN.has(event.type)) {
      run.push(item);
      continue;
    }
    await flush();
    const own = { signal: deadline.signal, statementTimeoutMs: Math.max(1, deadline.endsAt - Date.now()) };
    results.push(
      event.type === 'user.erased'
        ? await handleUserErased(deps.pool, deps.consumer, event, own, item.ctx.logger)
        : await handleRetraction(deps.pool, deps.consumer, event, own, deps.metrics, item.ctx.logger),
    );
  }
  await flush();
  return results;
}

/** Runs one transaction; once it committed, adds what it has to announce to `emissions`. */
async function processEvents(
  deps: NotificationBatchDeps,
  items: BatchItem<AnyEvent>[],
  deadline: BatchDeadline,
  emissions: Emission[],
): Promise<Array<Outcome | Error>> {
  const results: Array<Outcome | Error> = items.map(() => 'duplicate');
  const events = new Map<string, AnyEvent>();
  items.forEach(({ event }, i) => {
    // Refused before the claim: a claimed event would count as a duplicate when replayed after a fix.
    if (HANDLED.has(event.type)) events.set(event.id, event);
    else
      results[i] = new PermanentError(
        `notification-service does not handle event type '${event.type}'`,
        'UNHANDLED_EVENT_TYPE',
      );
  });
  if (events.size === 0) return results;

  // Each notification.created continues its source message's trace (its consumer span; null with
  // tracing off): the batch runs in no single message's context, so it is looked up per item.
  const traces = new Map<string, TraceCarrier | null>();
  for (const { event, ctx } of items)
    if (!traces.has(event.id)) traces.set(event.id, traceCarrier(messageTraceContext(ctx)));
  const committed = await withTransaction(
    deps.pool,
    { signal: deadline.signal, statementTimeoutMs: Math.max(1, deadline.endsAt - Date.now()) },
    (tx) => applyEvents(tx, deps, [...events.values()], deadline.signal, traces),
  );
  const { outcomes } = committed;
  emissions.push(...committed.emissions);
  const decided = new Set<string>();
  items.forEach(({ event }, i) => {
    if (results[i] instanceof Error || decided.has(event.id)) return; // the same id twice in one batch: the second copy is the duplicate
    decided.add(event.id);
    results[i] = outcomes.get(event.id) ?? 'duplicate';
  });
  return results;
}

/**
 * The batch transaction: claim + lock (one statement), the users projection if any, decisions,
 * then rows + counters (one statement). Returns the outcome of each fresh event (an event id absent
 * from the map was already processed: a duplicate) and the notification.created messages to
 * publish once it has committed: those of the rows written now, and those the duplicates wrote
 * before.
 */
async function applyEvents(
  tx: PoolClient,
  deps: NotificationBatchDeps,
  events: AnyEvent[],
  signal: AbortSignal,
  traces: ReadonlyMap<string, TraceCarrier | null>,
): Promise<{ outcomes: Map<string, Outcome>; emissions: Emission[] }> {
  const planned = events.flatMap((e) => (planNotifications(e) ?? []).map((p) => ({ ...p, sourceEventId: e.id })));
  const { fresh, inboxes } = await claimAndLockInboxes(
    tx,
    deps.consumer,
    events.map((e) => e.id),
    planned.map((p) => p.userId),
  );
  const outcomes = new Map<string, Outcome>();
  for (const e of events) if (fresh.has(e.id)) outcomes.set(e.id, 'skipped');
  const emissions = await reEmissionsOf(tx, planned, fresh, traces);

  const users = events.filter((e): e is EventOf<'user.upserted'> => e.type === 'user.upserted' && fresh.has(e.id));
  if (users.length) {
    signal.throwIfAborted(); // no new statement after the deadline (withTransaction cancels a running one)
    const upserts = users.map((e) => ({
      userId: e.data.userId,
      displayName: e.data.displayName,
      locale: e.data.locale,
      timezone: e.data.timezone,
      occurredAt: e.occurredAt,
    }));
    await upsertUsers(tx, upserts);
    for (const e of users) outcomes.set(e.id, 'processed');
    // The claim read the time zones before this batch's own upserts: a newer one here applies now.
    for (const [userId, zone] of newestTimezones(upserts)) {
      const inbox = inboxes.get(userId);
      if (inbox && (inbox.userOccurredAt === null || Date.parse(zone.occurredAt) >= Date.parse(inbox.userOccurredAt)))
        inbox.timezone = zone.timezone;
    }
  }
  const now = (deps.clock ?? (() => new Date()))();

  // Planned but not written (all duplicates by business key) → 'duplicate'; changed rows → 'processed'.
  const correlationOf = new Map(events.map((e) => [e.id, e.correlationId]));
  const rows: NotificationRow[] = [];
  const prefsOf = new Map<string, ReturnType<typeof effectivePreferences>>();
  for (const p of planned) {
    if (!fresh.has(p.sourceEventId)) continue; // a redelivered event has no second effect
    outcomes.set(p.sourceEventId, 'duplicate');
    let prefs = prefsOf.get(p.userId);
    if (!prefs) prefsOf.set(p.userId, (prefs = effectivePreferences(inboxes.get(p.userId)?.preferences ?? [])));
    const delivery = deliveryFor(prefs, p.type);
    if (!delivery.inApp && delivery.email === 'off' && !delivery.push) {
      outcomes.set(p.sourceEventId, 'skipped'); // the user wants no channel: nothing to record or send
      continue;
    }
    const inbox = inboxes.get(p.userId);
    const quietUntil = quietUntilOf(p.type, now, inbox?.quietHours ?? null, inbox?.timezone ?? null);
    rows.push({
      ...p,
      id: randomUUID(),
      correlationId: correlationOf.get(p.sourceEventId) ?? p.sourceEventId,
      inApp: delivery.inApp,
      emailChannel: delivery.email,
      push: delivery.push,
      ...(quietUntil ? { quietUntil } : {}),
    });
  }
  const unique = onePerSlot(rows);
  if (unique.length === 0) return { outcomes, emissions };
  signal.throwIfAborted();
  // The statement also reads, before its own writes, the unread items of the recipients whose
  // items it may move (grouped rows, a mention replacing a reply of its slot): `before`.
  const { written, before } = await writeNotifications(tx, unique, inboxes);
  // Grouped rows and replaced rows change items, not just rows: refresh those groups' items and
  // move those users' counters by the unread items gained (store/items.ts), under the same locks.
  const groups: GroupRef[] = [];
  const added = new Map<string, number>(); // what the statement already added: new ungrouped in-app rows
  for (const w of written) {
    if (w.inserted === null) continue;
    if (w.groupKey !== null) groups.push({ userId: w.userId, groupKey: w.groupKey });
    if (w.oldGroupKey !== null) groups.push({ userId: w.userId, groupKey: w.oldGroupKey });
    if (w.inserted && w.groupKey === null && w.inApp) added.set(w.userId, (added.get(w.userId) ?? 0) + 1);
  }
  // Only a grouped row or a replaced one moves items; fresh ungrouped rows were counted by the
  // statement itself, so a batch of those (mentions, security alerts) ends here: two statements.
  if (groups.length > 0 || written.some((w) => w.inserted === false)) {
    signal.throwIfAborted();
    await refreshItems(tx, groups);
    await applyItemDelta(tx, before, added);
  }
  const inserted = written.filter((w) => w.inserted === true);
  const upgraded = written.filter((w) => w.inserted === false);
  // A row a tombstone kept out (its source was deleted first) is 'skipped', unless the same event
  // wrote another row (a comment that notifies the post author and the parent author).
  for (const w of written)
    if (w.inserted === null && outcomes.get(w.sourceEventId) === 'duplicate') outcomes.set(w.sourceEventId, 'skipped');
  for (const w of [...inserted, ...upgraded]) outcomes.set(w.sourceEventId, 'processed');
  for (const w of inserted) deps.metrics.created.inc({ type: w.type, in_app: String(w.inApp) });
  deps.metrics.upgraded.inc(upgraded.length);
  // The notification.created of every row written (inserted, or replacing a lower rank), in batch
  // order, built from what the row now holds, exactly as a re-emission will rebuild it. Built
  // inside the transaction: one the contract refuses rolls the batch back (a permanent error).
  const byId = new Map(unique.map((r) => [r.id, r]));
  for (const w of written) {
    const r = w.id === null ? undefined : byId.get(w.id);
    if (!r || w.inserted === null || !w.createdAt) continue;
    emissions.push({
      event: notificationCreatedOf(storedOf(r, w.createdAt)),
      trace: traces.get(r.sourceEventId) ?? null,
    });
  }
  return { outcomes, emissions };
}

/** The row as stored, from the batch's input and the created_at the insert returned. */
function storedOf(r: NotificationRow, createdAt: Date): StoredNotification {
  return {
    id: r.id,
    userId: r.userId,
    type: r.type,
    idempotencyKey: r.idempotencyKey,
    actorId: r.actorId ?? null,
    resourceType: r.resourceType,
    resourceId: r.resourceId,
    excerpt: r.excerpt ?? null,
    emailChannel: r.emailChannel,
    groupKey: r.groupKey ?? null,
    push: r.push,
    quietUntil: r.quietUntil ?? null,
    createdAt,
    sourceEventId: r.sourceEventId,
    correlationId: r.correlationId,
  };
}

/**
 * A redelivered event (claimed before: not `fresh`) has no second effect, but it announces again
 * what its first delivery wrote: that delivery may have committed and then died before its
 * confirms (docs/NOTIFICATIONS.md "Emission"). Consumers deduplicate on the idempotency key, and
 * the message is the same one (same id), so a second copy sends nothing twice.
 */
async function reEmissionsOf(
  tx: PoolClient,
  planned: ReadonlyArray<{ sourceEventId: string; slotKey: string }>,
  fresh: ReadonlySet<string>,
  traces: ReadonlyMap<string, TraceCarrier | null>,
): Promise<Emission[]> {
  const again = planned.filter((p) => !fresh.has(p.sourceEventId));
  if (again.length === 0) return [];
  const rows = await writtenBy(
    tx,
    again.map((p) => p.sourceEventId),
    again.map((p) => p.slotKey),
  );
  return rows.map((n) => ({ event: notificationCreatedOf(n), trace: traces.get(n.sourceEventId) ?? null }));
}

/**
 * notification.created's `quietUntil` (docs/NOTIFICATIONS.md "Delivery timing"): the end of the
 * user's quiet hours when `now` falls inside them, in the user's time zone (UTC when none is known).
 * Never for a security alert: it goes out at once, whatever the hour. A zone the runtime no longer
 * knows (the contract checked it against this runtime's ICU data on the way in) counts as UTC rather
 * than failing the batch.
 */
export function quietUntilOf(
  type: NotificationType,
  now: Date,
  quiet: QuietHours | null,
  timezone: string | null,
): string | undefined {
  if (type === 'security_alert' || quiet === null) return undefined;
  let end: Date | null;
  try {
    end = quietHoursEnd(now, quiet, timezone ?? 'UTC');
  } catch (err) {
    if (!(err instanceof RangeError) || timezone === null) throw err;
    end = quietHoursEnd(now, quiet, 'UTC');
  }
  return end?.toISOString();
}
