import type { Topology } from './topology/types';

/**
 * Every exchange and queue of the system, in one place. Retry tiers (`<queue>.retry.<delay>`),
 * DLQs (`<queue>.dlq`), the dead-letter exchange and the policies are derived from this by
 * `plan()`; see docs/MESSAGING.md for why the topology looks like this.
 *
 * Queue separation follows the work's character: mentions and security alerts have a queue of
 * their own so no backlog elsewhere (email, feed, bulk follows) can delay them.
 */
const RETRY_DELAYS_MS = [1_000, 5_000, 30_000, 120_000, 600_000];

export const COMMUNITY_TOPOLOGY: Topology = {
  exchanges: [{ name: 'community.events', type: 'topic' }],
  queues: [
    {
      name: 'notification-service.critical',
      bindings: [{ exchange: 'community.events', routingKeys: ['user.mentioned', 'security.alert'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
      deliveryLimit: 5,
    },
    {
      name: 'notification-service.standard',
      bindings: [
        { exchange: 'community.events', routingKeys: ['user.upserted', 'comment.created', 'reaction.added', 'user.followed'] },
      ],
      retryDelaysMs: RETRY_DELAYS_MS,
      deliveryLimit: 5,
    },
    {
      name: 'email-service.send',
      bindings: [{ exchange: 'community.events', routingKeys: ['notification.created'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
      deliveryLimit: 5,
    },
    {
      name: 'email-service.users',
      bindings: [{ exchange: 'community.events', routingKeys: ['user.upserted'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
      deliveryLimit: 5,
    },
    {
      // Bound now so every event type a producer emits has a queue (an unroutable event holds back
      // its user's outbox). feed-service consumes it; until it runs, the backlog waits here for it.
      name: 'feed-service.activity',
      bindings: [{ exchange: 'community.events', routingKeys: ['post.published', 'user.followed', 'user.unfollowed'] }],
      retryDelaysMs: RETRY_DELAYS_MS,
      deliveryLimit: 5,
    },
  ],
};
