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
export const RECONCILER_RECOUNT_TYPE = 'reconciler.recount';

const RETRY_DELAYS_MS = [1_000, 5_000, 30_000, 120_000, 600_000];

export const COMMUNITY_TOPOLOGY: Topology = {
  exchanges: [{ name: EVENTS_EXCHANGE, type: 'topic' }],
  // Broker dead-lettering (delivery limit, max-length overflow) goes through this exchange to each
  // queue's DLQ; the policies an operator may edit are named `community:<queue>` (docs/MESSAGING.md).
  // No queue sets `deliveryLimit`: the runtime's default (50) is sized against consumer restarts,
  // which count toward the limit on RabbitMQ 3.10–3.13.
  deadLetterExchange: 'community.dlx',
  policyPrefix: 'community',
  queues: [
    {
      name: 'notification-service.critical',
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['user.mentioned', 'security.alert'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      name: 'notification-service.standard',
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['user.upserted', 'comment.created', 'reaction.added', 'user.followed'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      name: 'email-service.send',
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['notification.created'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // The critical email lane (security alerts): a second queue on the same routing key, so a
      // backlog of other email on email-service.send never delays them. notification.created
      // carries the notification type only in its body, and the contract fixes the routing key to
      // the event type, so the lane receives every notification.created and email-service acks the
      // other types at once (docs/EMAIL.md "The critical lane"). Producers are unchanged.
      name: 'email-service.send-critical',
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['notification.created'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      name: 'email-service.users',
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['user.upserted'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // Bound now so every event type a producer emits has a queue (an unroutable event holds back
      // its user's outbox). feed-service consumes it; until it runs, the backlog waits here for it.
      name: 'feed-service.activity',
      bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['post.published', 'user.followed', 'user.unfollowed'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // feed-service's own work: one message per chunk of a large fan-out (a keyset range of the
      // author's followers, checkpointed in Postgres), published by feed-service itself through
      // the default exchange, straight to the queue. No topic binding: no producer routes here.
      name: 'feed-service.fanout',
      bindings: [],
      retryDelaysMs: RETRY_DELAYS_MS,
    },
    {
      // The low-priority lane of feed-service: follow backfills and unfollow removals (one
      // reconcile per follower/followee pair), never ahead of post fan-out (docs/FEED.md).
      name: 'feed-service.backfill',
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
  ],
};
