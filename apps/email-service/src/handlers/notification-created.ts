import type { EventOf, NotificationCreatedV1 } from '@community/contracts';
import type { Handler } from '@community/messaging';
import type { Static } from '@sinclair/typebox';
import { deliverImmediate, type ImmediateDeps } from '../delivery/immediate';
import type { DigestPeriod, DigestStore } from '../store/digests';

export type EmailDecision = 'immediate' | 'digest' | 'off';

/**
 * notification-service decided the channel from the user's preferences (`emailChannel`); we follow
 * it, except that a security alert always goes out immediately (the contract: it cannot be muted
 * or delayed, whatever the preferences or the event say).
 */
export function decide(data: Static<typeof NotificationCreatedV1>): EmailDecision {
  if (data.type === 'security_alert') return 'immediate';
  return data.emailChannel;
}

export interface NotificationHandlerDeps extends ImmediateDeps {
  digests: DigestStore;
  digestPeriod: DigestPeriod;
}

/** `email-service.send`: one notification.created → an email now, a digest item, or nothing. */
export function notificationCreatedHandler(deps: NotificationHandlerDeps): Handler<EventOf<'notification.created'>> {
  return async (event, ctx) => {
    const d = event.data;
    const decision = decide(d);
    if (decision === 'off') {
      deps.metrics.decisions.inc({ decision: 'off' });
      return 'skipped';
    }
    if (decision === 'digest') {
      const decidedAt = new Date(event.occurredAt);
      // An item the user has opted out of is not even collected (the flush checks again).
      if (await deps.suppressions.blocks(d.userId, [d.type, 'digest'], decidedAt)) {
        deps.metrics.decisions.inc({ decision: 'suppressed' });
        return 'skipped';
      }
      deps.metrics.decisions.inc({ decision: 'digest' });
      const added = await deps.digests.addItem(
        {
          idempotencyKey: d.idempotencyKey,
          userId: d.userId,
          notificationId: d.notificationId,
          notificationType: d.type,
          actorId: d.actorId,
          resourceType: d.resourceType,
          resourceId: d.resourceId,
          excerpt: d.excerpt,
          occurredAt: decidedAt,
        },
        deps.digestPeriod,
        deps.now(),
      );
      return added === 'added' ? 'processed' : 'duplicate';
    }
    deps.metrics.decisions.inc({ decision: 'immediate' });
    return deliverImmediate(deps, event, ctx);
  };
}
