import {
  deliveryFor,
  effectivePreferences,
  NOTIFICATION_TYPES,
  planNotifications,
  QUEUES,
  validate,
  type NotificationType,
} from '@community/contracts';
import type { LostQueue } from './lost-work';
import type { WhyFacts, WhyTarget } from './facts';

export type StepStatus = 'ok' | 'skipped' | 'failed' | 'pending' | 'unknown';

export interface WhyStep {
  step:
    | 'event.received'
    | 'event.validated'
    | 'event.processed'
    | 'self-action'
    | 'preferences'
    | 'in-app'
    | 'email.decision'
    | 'email.ledger'
    | 'email.smtp'
    | 'dead-letter';
  status: StepStatus;
  detail: string;
}

const NOTIFICATION_QUEUES: string[] = [QUEUES.notificationCritical, QUEUES.notificationStandard];

/**
 * "Why didn't user X get notification Y?", step by step, from what the database and the DLQs hold
 * (store/why.ts). The self-action and preference decisions are recomputed with the very functions
 * notification-service decides with (libs/contracts notification-rules.ts); the recorded decision
 * (the notification row) is shown beside them, since preferences may have changed since.
 */
export function explain(
  t: WhyTarget,
  f: WhyFacts,
  /**
   * The lost-work rule's verdict on email-service.send (domain/lost-work.ts) and the time before
   * which a notification row is due (now − LOST_WORK_GRACE_MS; its notification.created is emitted
   * right after the row's commit): one with no ledger row then is not "queued" but most likely lost.
   */
  lostWork?: { emailQueue?: LostQueue; dueBefore: string },
): { userId: string; steps: WhyStep[]; verdict: string } {
  const steps: WhyStep[] = [];
  const add = (step: WhyStep['step'], status: StepStatus, detail: string) => steps.push({ step, status, detail });
  const deadSource = f.dead.filter((d) => NOTIFICATION_QUEUES.some((q) => d.queue.startsWith(q)));
  const deadEmail = f.dead.filter((d) => d.queue.startsWith('email-service.'));

  // 1. Received: the producer wrote it (and its relay published it).
  if (f.events.length > 0) {
    const e = f.events[0];
    add(
      'event.received',
      e.sentAt ? 'ok' : 'pending',
      e.sentAt
        ? `${e.eventId} written by ${e.producer} at ${e.createdAt}, published at ${e.sentAt}`
        : `${e.eventId} written by ${e.producer} at ${e.createdAt} and NOT yet published (outbox lag, see status check outbox-lag)`,
    );
  } else if (f.items.length > 0 || f.inbox.length > 0) {
    add(
      'event.received',
      'ok',
      `the producer's outbox row is gone (retention), but the event reached notification-service (${f.inbox.length ? 'inbox row' : 'notification row'})`,
    );
  } else {
    add(
      'event.received',
      'unknown',
      "no such event in any producer's outbox (kept OUTBOX_RETENTION_DAYS after publishing), and nothing of it reached notification-service",
    );
  }

  // 2. Validated against the contract.
  const raw = f.events[0]?.payload;
  const checked = raw === undefined ? undefined : validate(raw);
  if (checked === undefined)
    add(
      'event.validated',
      deadSource.length ? 'failed' : f.inbox.length ? 'ok' : 'unknown',
      deadSource.length
        ? `dead-lettered: ${deadSource[0].cause}`
        : f.inbox.length
          ? 'accepted by the consumer (it has an inbox row)'
          : 'the event body is not available to check',
    );
  else if (checked.ok) add('event.validated', 'ok', `valid ${checked.event.type} v${checked.event.version}`);
  else add('event.validated', 'failed', `refused by the contract: ${checked.error.message}`);

  // 3. Processed by notification-service's consumers (the inbox), or dead-lettered.
  const processed = f.inbox.filter((r) => NOTIFICATION_QUEUES.includes(r.consumer));
  if (processed.length > 0)
    add('event.processed', 'ok', processed.map((r) => `processed by ${r.consumer} at ${r.processedAt}`).join('; '));
  else if (deadSource.length > 0)
    add(
      'event.processed',
      'failed',
      deadSource.map((d) => `dead-lettered in ${d.queue}${d.at ? ` at ${d.at}` : ''}: ${d.cause}`).join('; '),
    );
  else if (f.items.length > 0)
    add('event.processed', 'ok', 'processed (its inbox row was purged by retention; the notification row exists)');
  else
    add(
      'event.processed',
      f.events.some((e) => e.sentAt) ? 'pending' : 'unknown',
      'no inbox row and no dead letter: still queued, or never delivered (see status checks backlog and consumers)',
    );

  // 4. Self-action and recipients: the planning rule itself.
  let plannedType: NotificationType | undefined;
  if (checked?.ok) {
    const planned = planNotifications(checked.event) ?? [];
    const mine = planned.find((p) => p.userId === t.userId);
    const data = checked.event.data as Record<string, unknown>;
    const actor = [data.actorId, data.authorId, data.followerId].find((x) => typeof x === 'string');
    if (mine) {
      plannedType = mine.type;
      add('self-action', 'ok', `${t.userId} is a recipient: a ${mine.type} notification (key ${mine.idempotencyKey})`);
    } else if (actor === t.userId)
      add(
        'self-action',
        'skipped',
        `${t.userId} is the actor of this ${checked.event.type}: nobody is notified of their own action`,
      );
    else
      add(
        'self-action',
        'skipped',
        `${t.userId} is not a recipient of this ${checked.event.type}${planned.length ? ` (recipients: ${planned.map((p) => p.userId).join(', ')})` : ' (it notifies nobody)'}`,
      );
  } else if (f.items[0]) {
    plannedType = f.items[0].type as NotificationType;
    add('self-action', 'ok', `${t.userId} was a recipient (a ${f.items[0].type} notification exists)`);
  } else add('self-action', 'unknown', 'cannot be recomputed without the event');

  // 5. Preferences: what they say now, beside what was recorded.
  const item = f.items[0];
  const type = (item?.type ?? plannedType) as NotificationType | undefined;
  if (type && NOTIFICATION_TYPES.includes(type)) {
    const now = deliveryFor(effectivePreferences(f.preferences), type);
    const recorded = item ? ` At ingest: in-app ${item.inApp ? 'on' : 'off'}, email ${item.emailChannel}.` : '';
    const muted = !now.inApp && now.email === 'off';
    add(
      'preferences',
      muted ? 'skipped' : 'ok',
      `${type} for ${t.userId} now: in-app ${now.inApp ? 'on' : 'off'}, email ${now.email}${muted ? ' (muted)' : ''}.${recorded}`,
    );
  } else add('preferences', 'unknown', 'no notification type to look up');

  // 6. The in-app row and its read state.
  if (!item)
    add(
      'in-app',
      steps.some((s) => s.status === 'skipped' || s.status === 'failed') ? 'skipped' : 'failed',
      'no notification row for this user',
    );
  else if (!item.inApp)
    add(
      'in-app',
      'skipped',
      `row ${item.id} exists but is hidden (in-app off for ${item.type} at the time); it only carries the email decision`,
    );
  else
    add(
      'in-app',
      'ok',
      `row ${item.id} (${item.type}) created at ${item.createdAt}, ${item.readAt ? `read at ${item.readAt}` : 'unread'}`,
    );

  // 7. The email decision, 8. the ledger, 9. SMTP.
  if (!item) {
    add('email.decision', 'skipped', 'no notification, so no email');
  } else if (item.emailChannel === 'off') {
    add('email.decision', 'skipped', `email off for ${item.type} (the user's preference at ingest)`);
  } else {
    // The row is the record of its notification.created (same id): there is no published-at, the
    // batch emits it right after its commit, and a redelivered source event re-emits it.
    const created = f.created.find((c) => c.idempotencyKey === item.idempotencyKey);
    add(
      'email.decision',
      'ok',
      `${item.emailChannel} email${
        created
          ? `; notification.created ${created.eventId} ${
              created.withdrawnAt
                ? `withdrawn at ${created.withdrawnAt} (not re-emitted any more)`
                : `emitted after its row's commit (created at ${created.createdAt})`
            }`
          : ''
      }`,
    );
    const delivery = f.deliveries.find((d) => d.idempotencyKey === item.idempotencyKey);
    const digest = f.digestItems.find((d) => d.idempotencyKey === item.idempotencyKey);
    if (delivery) {
      const st: StepStatus =
        delivery.state === 'sent'
          ? 'ok'
          : delivery.state === 'failed'
            ? 'failed'
            : delivery.state === 'suppressed'
              ? 'skipped'
              : 'pending';
      add(
        'email.ledger',
        st,
        `ledger ${delivery.channel}: ${delivery.state} after ${delivery.attempts} attempt(s)${delivery.lastError ? `, last error: ${delivery.lastError}` : ''}`,
      );
      if (delivery.state === 'sent')
        add(
          'email.smtp',
          'ok',
          `accepted by SMTP${delivery.provider ? ` (the ${delivery.provider} provider)` : ''} at ${delivery.sentAt}: ${delivery.smtpResponse ?? ''}`.trim(),
        );
      else if (delivery.state === 'failed')
        add(
          'email.smtp',
          'failed',
          `refused: ${delivery.lastError ?? delivery.smtpResponse ?? 'no response recorded'}`,
        );
      else if (delivery.state === 'suppressed' && delivery.lastError?.startsWith('read_in_app'))
        // Delay then check (docs/EMAIL.md "Delivery timing"): read in the app while the email waited.
        add('email.smtp', 'skipped', 'not sent: the user read it in the app while the email waited');
      else if (delivery.state === 'suppressed')
        add('email.smtp', 'skipped', `not sent: suppressed (${f.suppressions.join(', ') || 'opt-out'})`);
      else if (delivery.heldUntil)
        add(
          'email.smtp',
          'pending',
          `held until ${delivery.heldUntil} (the user's quiet hours, or the delay before the read check), then sent unless read in the app`,
        );
      else
        add(
          'email.smtp',
          'pending',
          // Pinned: an attempt there may have delivered it, so only that provider may send it (docs/EMAIL.md "Two providers").
          `not sent yet${delivery.pinnedProvider ? `; bound to the ${delivery.pinnedProvider} provider (an attempt there may have delivered it)` : ''}`,
        );
    } else if (digest) {
      add(
        'email.ledger',
        digest.windowStatus === 'flushed' ? 'ok' : 'pending',
        `in the digest window ending ${digest.windowEnd} (${digest.windowStatus})`,
      );
      add('email.smtp', 'unknown', "the digest email carries it; see the window's digest delivery");
    } else if (!f.emailUser) {
      add(
        'email.ledger',
        'failed',
        `email-service knows no address for ${t.userId} (no user.upserted projected): nothing to send to`,
      );
    } else {
      const lost = lostWork?.emailQueue;
      // Due as the lost-work rule counts it: a row not withdrawn, created longer ago than the grace.
      const due =
        created !== undefined &&
        created.withdrawnAt === null &&
        lostWork !== undefined &&
        created.createdAt < lostWork.dueBefore;
      if (deadEmail.length) add('email.ledger', 'failed', 'no ledger row: the notification.created was dead-lettered');
      else if (created?.withdrawnAt)
        add(
          'email.ledger',
          'skipped',
          `no ledger row: the notification was withdrawn at ${created.withdrawnAt}: nothing to send any more`,
        );
      else if (lost && due && created) {
        add(
          'email.ledger',
          'failed',
          `no ledger row, and its notification.created (emitted after its row's commit, created at ${created.createdAt}) is not in ${lost.queue}: the queue holds ${lost.held} message(s) for ${lost.due} due row(s), at least ${lost.lost} lost (check lost-work). Re-drive: npm run ops -- ${item.emailChannel === 'digest' ? 'digest' : 'email'} redrive --since ${created.createdAt}`,
        );
      } else
        add(
          'email.ledger',
          'pending',
          due
            ? 'no ledger row: its message may still be queued (the lost-work check finds no loss in email-service.send), or retention purged the row'
            : 'no ledger row yet (queued, or retention purged it)',
        );
    }
  }

  // 10. Dead letters.
  if (f.dead.length)
    add('dead-letter', 'failed', f.dead.map((d) => `${d.queue}: ${d.messageId}: ${d.cause}`).join('; '));
  else add('dead-letter', 'ok', `no dead letter of these messages (looked in ${f.dlqSource})`);

  const first =
    steps.find((s) => s.status === 'failed') ??
    steps.find((s) => s.status === 'skipped') ??
    steps.find((s) => s.status === 'pending');
  const verdict = first ? `${first.step}: ${first.detail}` : 'delivered';
  return { userId: t.userId, steps, verdict };
}
