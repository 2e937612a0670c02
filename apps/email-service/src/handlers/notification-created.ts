import type { EventOf } from '@community/contracts';
import type { Handler } from '@community/messaging';
import { deliverImmediate, type ImmediateDeps } from '../delivery/immediate';
import { decideChannel } from '../domain/channel';
import * as digests from '../store/digests';
import type { DigestPeriod } from '../domain/digest-window';
import * as suppressions from '../store/suppressions';
import { isWithdrawn } from '../store/withdrawals';

export interface NotificationHandlerDeps extends ImmediateDeps {
  digestPeriod: DigestPeriod;
  /** DIGEST_LOCAL_HOUR: daily windows start at this hour of the user's time zone. */
  digestLocalHour: number;
}

/** `email-service.send`: one notification.created → an email now, a digest item, or nothing. */
export function notificationCreatedHandler(deps: NotificationHandlerDeps): Handler<EventOf<'notification.created'>> {
  return async (event, ctx) => {
    const d = event.data;
    const channel = decideChannel(d);
    if (channel === 'off') {
      deps.metrics.decisions.inc({ decision: 'off' });
      return 'skipped';
    }
    // Withdrawn before it got here (its source was deleted; notification.withdrawn came first).
    if (await isWithdrawn(deps.pool, d.idempotencyKey)) {
      deps.metrics.decisions.inc({ decision: 'withdrawn' });
      return 'skipped';
    }
    if (channel === 'digest') {
      const decidedAt = new Date(event.occurredAt);
      // An item the user has opted out of is not even collected (the flush checks again).
      if (await suppressions.blocks(deps.pool, d.userId, [d.type, 'digest'], decidedAt)) {
        deps.metrics.decisions.inc({ decision: 'suppressed' });
        return 'skipped';
      }
      deps.metrics.decisions.inc({ decision: 'digest' });
      const added = await digests.addItem(
        deps.pool,
        {
          idempotencyKey: d.idempotencyKey,
          userId: d.userId,
          notificationId: d.notificationId,
          notificationType: d.type,
          actorId: d.actorId,
          resourceType: d.resourceType,
          resourceId: d.resourceId,
          excerpt: d.excerpt,
          groupKey: d.groupKey,
          occurredAt: decidedAt,
        },
        deps.digestPeriod,
        deps.now(),
        deps.digestLocalHour,
      );
      return added === 'added' ? 'processed' : 'duplicate';
    }
    deps.metrics.decisions.inc({ decision: 'immediate' });
    return deliverImmediate(deps, event, ctx);
  };
}
