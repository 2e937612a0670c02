import { dlqName, type ServiceAccess } from '@community/messaging';
import {
  COMMUNITY_TOPOLOGY,
  EVENTS_EXCHANGE,
  NOTIFICATION_WITHDRAWN_TYPE,
  QUEUES,
  RECONCILER_RECOUNT_TYPE,
  RETRACTION_TYPES,
  USER_ERASED_TYPE,
} from './topology';

/**
 * What each service does on the broker, next to the topology it refers to. The broker users and
 * their least-privilege permissions (infra/rabbitmq/definitions.json, the Messaging Topology
 * Operator's User/Permission/TopicPermission), the KEDA triggers (infra/k8s) and the permission
 * tests are generated from or checked against this (`npm run infra:generate`, docs/DEPLOY.md).
 * A service that starts consuming a queue or publishing a new routing key changes this list in the
 * same commit; the generated files then change too, and a test says so until they are regenerated.
 */
const DLQS = COMMUNITY_TOPOLOGY.queues.map((q) => dlqName(q.name));
const WORK_QUEUES = COMMUNITY_TOPOLOGY.queues.map((q) => q.name);

export const SERVICE_ACCESS: readonly ServiceAccess[] = [
  {
    // The demo community: the producer of every community event (through its outbox).
    user: 'demo-community-api',
    consumes: [],
    publishes: [
      {
        exchange: EVENTS_EXCHANGE,
        routingKeys: [
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
        ],
      },
    ],
    sendsTo: [],
    reads: [],
    tags: ['management'],
  },
  {
    user: 'notification-service',
    consumes: [QUEUES.notificationCritical, QUEUES.notificationStandard],
    publishes: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['notification.created', NOTIFICATION_WITHDRAWN_TYPE] }],
    sendsTo: [],
    reads: [],
    tags: ['management'],
  },
  {
    user: 'email-service',
    consumes: [QUEUES.emailSend, QUEUES.emailSendCritical, QUEUES.emailUsers],
    publishes: [],
    sendsTo: [],
    reads: [],
    tags: ['management'],
  },
  {
    // Web Push (docs/PUSH.md): consumes its one queue, publishes nothing.
    user: 'push-service',
    consumes: [QUEUES.pushSend],
    publishes: [],
    sendsTo: [],
    reads: [],
    tags: ['management'],
  },
  {
    // Feeds its own fan-out and backfill queues through the default exchange.
    user: 'feed-service',
    consumes: [QUEUES.feedActivity, QUEUES.feedFanout, QUEUES.feedBackfill],
    publishes: [],
    sendsTo: [QUEUES.feedFanout, QUEUES.feedBackfill],
    reads: [],
    tags: ['management'],
  },
  {
    // Reads and acks every DLQ, replays to the original queue through the default exchange, feeds
    // its own low-priority queue (recount requests on the events exchange, a key only it binds),
    // and watches every queue through the management API (monitoring). Publishes user.erased (an
    // operator's erasure, through its outbox).
    user: 'reconciler',
    consumes: [QUEUES.reconcilerLowPriority, QUEUES.reconcilerAccountDeletions],
    publishes: [{ exchange: EVENTS_EXCHANGE, routingKeys: [RECONCILER_RECOUNT_TYPE, USER_ERASED_TYPE] }],
    sendsTo: WORK_QUEUES,
    reads: DLQS,
    tags: ['monitoring'],
  },
];

/** The user that provisions the topology and users (definitions import, policies): docs/DEPLOY.md. */
export const TOPOLOGY_ADMIN_USER = 'topology-admin';

/** The vhost of a deployment (docs/DEPLOY.md); tests import the definitions into vhosts of their own. */
export const COMMUNITY_VHOST = 'community';

/**
 * Users that only watch. Tag `monitoring`, and permissions that match nothing (`^$`): access to the
 * vhost and not one queue or exchange.
 * - keda reads queue depths over the management API.
 * - volunteer is the management UI login of whoever is on shift (docs/RUNBOOK.md): every queue's
 *   depth, rates and consumers, every vhost, the nodes; and no purge, no delete, no "Get messages"
 *   (which takes messages off the queue), no publish, no policy. Read must be `^$` as well: the
 *   management API purges through `queue.purge`, which RabbitMQ authorises with *read* permission,
 *   so `^$ ^$ .*` would still let the UI's Purge button empty a work queue (probed on 3.10: 204;
 *   infra/tools/test/volunteer-login.test.ts tests the login on the broker).
 */
export const OBSERVER_USERS: ReadonlyArray<{ user: string; tags: Array<'monitoring'> }> = [
  { user: 'keda', tags: ['monitoring'] },
  { user: 'volunteer', tags: ['monitoring'] },
];
