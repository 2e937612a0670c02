import type { Topology } from '@community/messaging';

/**
 * Every exchange and queue of the system, in one place. It lives with the contract because it is
 * part of it: which queues receive which event types is decided together with the event types
 * themselves (a new type without a queue would be unroutable and hold back its producer's outbox;
 * see the spec next to this file). The messaging runtime only knows how to turn a topology into
 * broker objects; retry tiers (`<queue>.retry.<delay>`), DLQs (`<queue>.dlq`), the dead-letter
 * exchange and the policies are derived from this by its `plan()` (docs/MESSAGING.md).
 *
 * Queue separation follows the work's character: mentions and security alerts have a queue of
 * their own so no backlog elsewhere (email, feed, bulk follows) can delay them.
 */
export const EVENTS_EXCHANGE = 'community.events';
/**
 * The reconciler's own work queue (docs/RECONCILER.md "The low-priority queue"). Its messages are
 * envelope-shaped with a type of the reconciler's own (`reconciler.recount`) and travel on the events
 * exchange with routing key = type like every event; no other service binds that key. (Not an
 * exchange of its own: a second exchange would take away every service's default exchange.)
 */
export const RECONCILER_LOW_PRIORITY_QUEUE = 'reconciler.low-priority';

/**
 * Every work queue's name, spelled once: the topology below declares them, SERVICE_ACCESS grants
 * them, and every app and tool that names a queue imports it from here. Derived names (retry tiers,
 * `<queue>.dlq`, `<queue>.direct`) come from libs/messaging's naming functions (`dlqName`, ...).
 */
export const QUEUES = {
  notificationCritical: 'notification-service.critical',
  notificationStandard: 'notification-service.standard',
  emailSend: 'email-service.send',
  emailSendCritical: 'email-service.send-critical',
  emailUsers: 'email-service.users',
  feedActivity: 'feed-service.activity',
  feedFanout: 'feed-service.fanout',
  feedBackfill: 'feed-service.backfill',
  reconcilerLowPriority: RECONCILER_LOW_PRIORITY_QUEUE,
  reconcilerAccountDeletions: 'reconciler.account-deletions',
  pushSend: 'push-service.send',
} as const;
export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

export const RECONCILER_RECOUNT_TYPE = 'reconciler.recount';
/**
 * An operator's erasure of a user (docs/CONTRACT.md). Produced by the reconciler only (its outbox,
 * behind the audit row); every service that holds personal data consumes it on a queue it already
 * has, so an erasure waits behind the same user's earlier events of that queue rather than racing them.
 */
export const USER_ERASED_TYPE = 'user.erased';
/**
 * What notification-service announces when it withdraws a notification (a retraction): consumed by
 * email-service on its send queue, behind the notification.created it withdraws.
 */
export const NOTIFICATION_WITHDRAWN_TYPE = 'notification.withdrawn';
/** The retractions of the community API (docs/NOTIFICATIONS.md "Retraction"). */
export const RETRACTION_TYPES = ['comment.deleted', 'post.deleted', 'reaction.removed'] as const;

/**
 * notification.created, and only it, re-routed by the notification's type: a headers exchange bound
 * to EVENTS_EXCHANGE on that routing key. Producers publish to EVENTS_EXCHANGE as before.
 */
export const NOTIFICATIONS_BY_TYPE_EXCHANGE = 'community.notifications-by-type';
/**
 * The AMQP header notification-service sets on notification.created: the notification's type
 * (`data.type`), an additive property (docs/CONTRACT.md). Not `x-` prefixed: RabbitMQ's headers
 * exchange ignores x- headers when matching.
 */
export const NOTIFICATION_TYPE_HEADER = 'notification-type';

/**
 * The AMQP headers a producer sets on an event beyond the envelope's: on notification.created, its
 * notification type in NOTIFICATION_TYPE_HEADER; nothing on other events. (The outbox relay calls
 * it per row, so rows written before the header existed get it too.)
 */
export function notificationHeaders(event: { type: string }): Record<string, string> | undefined {
  if (event.type !== 'notification.created') return undefined;
  const type = (event as { data?: { type?: unknown } }).data?.type;
  return typeof type === 'string' ? { [NOTIFICATION_TYPE_HEADER]: type } : undefined;
}

const RETRY_DELAYS_MS = [1_000, 5_000, 30_000, 120_000, 600_000];

/** The community API's events (docs/CONTRACT.md): every type but notification-service's own. */
const COMMUNITY_EVENT_TYPES = [
  'user.upserted',
  'user.mentioned',
  'comment.created',
  'reaction.added',
  'user.followed',
  'user.unfollowed',
  'post.published',
  'security.alert',
  ...RETRACTION_TYPES,
  'user.deleted',
];

export const COMMUNITY_TOPOLOGY: Topology = {
  exchanges: [
    { name: EVENTS_EXCHANGE, type: 'topic' },
    {
      name: NOTIFICATIONS_BY_TYPE_EXCHANGE,
      type: 'headers',
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['notification.created'] }],
    },
  ],
  // Broker dead-lettering (delivery limit, max-length overflow) goes through this exchange to each
  // queue's DLQ; the policies an operator may edit are named `community:<queue>` (docs/MESSAGING.md).
  // No queue sets `deliveryLimit`: the runtime's default (50) is sized against consumer restarts,
  // which count toward the limit on RabbitMQ 3.10–3.13.
  deadLetterExchange: 'community.dlx',
  policyPrefix: 'community',
  // Who may publish what (docs/MESSAGING.md "Broker identity"): each consumer dead-letters a type
  // whose AMQP user-id is not the broker user of one of its producers (by default the user of the
  // service's name, as SERVICE_ACCESS and infra/rabbitmq/definitions.json name them), of a
  // replayer (the reconciler: DLQ replays, stuck fan-out chunks) or its own (its retry copies).
  // Kept in step with SERVICE_ACCESS's routing keys by accessProblems (libs/messaging).
  producers: {
    ...Object.fromEntries(COMMUNITY_EVENT_TYPES.map((type) => [type, ['demo-community-api']])),
    'notification.created': ['notification-service'],
    [NOTIFICATION_WITHDRAWN_TYPE]: ['notification-service'],
    [RECONCILER_RECOUNT_TYPE]: ['reconciler'],
    [USER_ERASED_TYPE]: ['reconciler'],
  },
  replayers: ['reconciler'],
  queues: [
    {
      name: QUEUES.notificationCritical,
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['user.mentioned', 'security.alert'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      name: QUEUES.notificationStandard,
      bindings: [
        {
          exchange: EVENTS_EXCHANGE,
          routingKeys: [
            'user.upserted',
            'comment.created',
            'reaction.added',
            'user.followed',
            USER_ERASED_TYPE,
            // Retractions ride the queue of most creations (the critical queue's mentions are
            // caught by the tombstone, whatever the order: docs/NOTIFICATIONS.md "Retraction").
            ...RETRACTION_TYPES,
          ],
        },
      ],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      name: QUEUES.emailSend,
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['notification.created', NOTIFICATION_WITHDRAWN_TYPE] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // The critical email lane (security alerts): its own queue, so a backlog of other email on
      // email-service.send never delays them. The contract fixes the routing key to the event type,
      // so the lane is fed through NOTIFICATIONS_BY_TYPE_EXCHANGE, which gets only notification.created
      // and passes on those whose `notification-type` header (set by notification-service) is
      // security_alert. A notification.created without the header (published before it existed)
      // reaches email-service.send only, which emails it as ever (docs/EMAIL.md "The critical lane").
      name: QUEUES.emailSendCritical,
      bindings: [
        {
          exchange: NOTIFICATIONS_BY_TYPE_EXCHANGE,
          headers: { [NOTIFICATION_TYPE_HEADER]: 'security_alert' },
          match: 'all',
        },
      ],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      name: QUEUES.emailUsers,
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['user.upserted', USER_ERASED_TYPE] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // Bound now so every event type a producer emits has a queue (an unroutable event holds back
      // its user's outbox). feed-service consumes it; until it runs, the backlog waits here for it.
      name: QUEUES.feedActivity,
      bindings: [
        {
          exchange: EVENTS_EXCHANGE,
          routingKeys: ['post.published', 'user.followed', 'user.unfollowed', USER_ERASED_TYPE, 'post.deleted'],
        },
      ],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // feed-service's own work: one message per chunk of a large fan-out (a keyset range of the
      // author's followers, checkpointed in Postgres), published by feed-service itself through
      // the default exchange, straight to the queue. No topic binding: no producer routes here.
      name: QUEUES.feedFanout,
      bindings: [],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // The low-priority lane of feed-service: follow backfills and unfollow removals (one
      // reconcile per follower/followee pair), never ahead of post fan-out (docs/FEED.md).
      name: QUEUES.feedBackfill,
      bindings: [],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // The reconciler's repair requests, one batch of users per message (an operator's full
      // recount): worked one at a time beside the scheduled jobs, so a large repair never holds
      // more than one batch of counter locks; a failed batch takes the retry tiers and then its DLQ,
      // where the DLQ console replays it.
      name: RECONCILER_LOW_PRIORITY_QUEUE,
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: [RECONCILER_RECOUNT_TYPE] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // A user's own account deletion (user.deleted): the reconciler records it as an erasure, the
      // same audit row and user.erased as an operator's `ops user erase` (one mechanism), with cause
      // account_deleted. A queue of its own so a long recount never holds a deletion back.
      name: QUEUES.reconcilerAccountDeletions,
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['user.deleted'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // push-service (docs/PUSH.md): Web Push of notification.created, behind it on the same queue
      // the notification.withdrawn that takes back a push not sent yet, and user.erased (the user's
      // browser subscriptions go). A queue of its own: a slow push service never holds back email.
      name: QUEUES.pushSend,
      bindings: [
        {
          exchange: EVENTS_EXCHANGE,
          routingKeys: ['notification.created', NOTIFICATION_WITHDRAWN_TYPE, USER_ERASED_TYPE],
        },
      ],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
  ],
};
