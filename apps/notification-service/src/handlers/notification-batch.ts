import type { Pool, PoolClient } from 'pg';
import { buildEvent, type AnyEvent, type EventOf } from '@community/contracts';
import { runBatchOnce } from '@community/idempotency';
import { classify, PermanentError, type BatchContext, type BatchHandler, type BatchItem, type Outcome } from '@community/messaging';
import { enqueueEvents } from '@community/outbox';
import { deliveryFor, effectivePreferences } from '../domain/preferences';
import { onePerSlot, planNotifications } from '../domain/plan';
import type { NotificationMetrics } from '../metrics';
import { SERVICE_NAME } from '../service-name';
import { lockInboxes, upsertUsers, writeNotifications, type NotificationRow, type WrittenRow } from '../store/ingest';

export interface NotificationBatchDeps {
  pool: Pool;
  /** The inbox (processed_events) consumer name: the queue, so the two queues never share claims. */
  consumer: string;
  metrics: NotificationMetrics;
}

const HANDLED = new Set<AnyEvent['type']>(['user.upserted', 'user.mentioned', 'comment.created', 'reaction.added', 'user.followed', 'security.alert']);

interface Input {
  eventId: string;
  event: AnyEvent;
}

/**
 * The consumers' batch handler (both queues): one transaction for the whole batch.
 *
 * 1. claim the event ids (processed_events): redelivered events are duplicates at once;
 * 2. user.upserted → the display-name projection;
 * 3. plan the notifications (self-actions plan nothing);
 * 4. lock the recipients' counter rows, advance their inbox versions, read their preferences;
 * 5. apply preferences, keep one notification per slot;
 * 6. insert the notifications + add the inserted ones to the counters + NOTIFY the SSE hubs
 *    (one statement);
 * 7. notification.created into the outbox, for the inserted rows only; COMMIT. The runtime acks
 *    the messages only after this returns.
 *
 * A batch that fails with a permanent error (say one event whose text Postgres refuses) is rerun
 * one event per transaction, so only the culprit is dead-lettered and the rest commit.
 */
export function createNotificationBatchHandler(deps: NotificationBatchDeps): BatchHandler<AnyEvent> {
  return async (items: BatchItem<AnyEvent>[], ctx: BatchContext) => {
    try {
      return await processBatch(deps, items);
    } catch (err) {
      if (classify(err) !== 'permanent') throw err; // the whole batch goes to a retry tier
      if (items.length === 1) throw describeFailure(err);
      ctx.logger.warn({ err, size: items.length }, 'batch failed permanently; isolating the failing events one by one');
      const results: Array<Outcome | Error> = [];
      for (const item of items) {
        try {
          results.push((await processBatch(deps, [item]))[0]);
        } catch (itemErr) {
          results.push(describeFailure(itemErr));
        }
      }
      return results;
    }
  };
}

/**
 * pg's errors are all named 'error': dead-letter headers would say nothing. A permanent database
 * refusal becomes a PermanentError that names the SQLSTATE and PostgreSQL's reason.
 */
function describeFailure(err: unknown): Error {
  const code = (err as { code?: unknown }).code;
  if (err instanceof Error && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && classify(err) === 'permanent') {
    return new PermanentError(`PostgreSQL refused this event's data (SQLSTATE ${code}): ${err.message}`, 'DATABASE_REFUSED', { cause: err });
  }
  return err instanceof Error ? err : new Error(String(err));
}

async function processBatch(deps: NotificationBatchDeps, items: BatchItem<AnyEvent>[]): Promise<Array<Outcome | Error>> {
  const results: Array<Outcome | Error> = items.map(() => 'duplicate');
  const inputs: Input[] = [];
  items.forEach(({ event }, i) => {
    // Refused before the claim: a claimed event would count as a duplicate when replayed after a fix.
    if (HANDLED.has(event.type)) inputs.push({ eventId: event.id, event });
    else results[i] = new PermanentError(`notification-service does not handle event type '${event.type}'`, 'UNHANDLED_EVENT_TYPE');
  });
  if (inputs.length === 0) return results;

  const { fresh, result: changedByEvent } = await runBatchOnce(deps.pool, deps.consumer, inputs, (tx, freshItems) =>
    applyEvents(tx, freshItems.map((f) => f.event), deps.metrics),
  );
  const freshIds = new Set(fresh.map((f) => f.eventId));
  items.forEach(({ event }, i) => {
    if (results[i] instanceof Error || !freshIds.has(event.id)) return;
    freshIds.delete(event.id); // the same id twice in one batch: the second copy is the duplicate
    results[i] = changedByEvent.get(event.id) ?? 'skipped';
  });
  return results;
}

/** Applies fresh events inside the transaction; returns each event's outcome (absent = skipped). */
async function applyEvents(tx: PoolClient, events: AnyEvent[], metrics: NotificationMetrics): Promise<Map<string, Outcome>> {
  const outcomes = new Map<string, Outcome>();
  const users = events.filter((e): e is EventOf<'user.upserted'> => e.type === 'user.upserted');
  if (users.length) {
    await upsertUsers(tx, users.map((e) => ({ userId: e.data.userId, displayName: e.data.displayName, locale: e.data.locale, occurredAt: e.occurredAt })));
    for (const e of users) outcomes.set(e.id, 'processed');
  }

  const correlationOf = new Map(events.map((e) => [e.id, e.correlationId]));
  const planned = events.flatMap((e) => (planNotifications(e) ?? []).map((p) => ({ ...p, sourceEventId: e.id })));
  if (planned.length === 0) return outcomes;
  // Planned but not written (all duplicates by business key) → 'duplicate'; changed rows → 'processed'.
  for (const p of planned) outcomes.set(p.sourceEventId, 'duplicate');

  // Every recipient is locked, also one whose preferences turn out to want nothing: harmless (its
  // version advances), and it saves a round trip to read preferences before locking.
  const inboxes = await lockInboxes(tx, planned.map((p) => p.userId));
  const prefsOf = new Map<string, ReturnType<typeof effectivePreferences>>();
  const rows: NotificationRow[] = [];
  for (const p of planned) {
    let prefs = prefsOf.get(p.userId);
    if (!prefs) prefsOf.set(p.userId, (prefs = effectivePreferences(inboxes.get(p.userId)?.preferences ?? [])));
    const delivery = deliveryFor(prefs, p.type);
    if (!delivery.inApp && delivery.email === 'off') {
      outcomes.set(p.sourceEventId, 'skipped'); // the user wants neither: nothing to record or send
      continue;
    }
    rows.push({ ...p, inApp: delivery.inApp, emailChannel: delivery.email });
  }
  const unique = onePerSlot(rows);
  const versions = new Map([...inboxes].map(([user, inbox]) => [user, inbox.version]));
  const written = await writeNotifications(tx, unique, versions);
  const inserted = written.filter((w) => w.inserted);
  await enqueueEvents(
    tx,
    SERVICE_NAME,
    inserted.map((w) => ({ event: notificationCreated(w, correlationOf.get(w.sourceEventId) ?? w.sourceEventId), aggregateId: w.userId })),
  );
  for (const w of written) outcomes.set(w.sourceEventId, 'processed');
  for (const w of inserted) metrics.created.inc({ type: w.type, in_app: String(w.inApp) });
  metrics.upgraded.inc(written.length - inserted.length);
  return outcomes;
}

function notificationCreated(w: WrittenRow, correlationId: string): EventOf<'notification.created'> {
  return buildEvent(
    'notification.created',
    {
      notificationId: w.id,
      userId: w.userId,
      type: w.type,
      idempotencyKey: w.idempotencyKey,
      actorId: w.actorId ?? undefined,
      resourceType: w.resourceType,
      resourceId: w.resourceId,
      emailChannel: w.emailChannel,
      excerpt: w.excerpt ?? undefined,
    },
    // The source event's correlation id: one id follows a comment from the API to the email.
    { producer: SERVICE_NAME, correlationId },
  );
}
