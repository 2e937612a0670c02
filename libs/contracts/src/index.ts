export * from './envelope';
export * from './events';
export * from './errors';
export * from './validate';
export * from './build';
export * from './idempotency-keys';
export * from './preferences';
export * from './notification-rules';
export {
  COMMUNITY_TOPOLOGY,
  EVENTS_EXCHANGE,
  NOTIFICATION_TYPE_HEADER,
  NOTIFICATIONS_BY_TYPE_EXCHANGE,
  notificationHeaders,
  NOTIFICATION_WITHDRAWN_TYPE,
  QUEUES,
  RECONCILER_LOW_PRIORITY_QUEUE,
  RECONCILER_RECOUNT_TYPE,
  RETRACTION_TYPES,
  USER_ERASED_TYPE,
} from './topology';
export type { QueueName } from './topology';
export { COMMUNITY_VHOST, OBSERVER_USERS, SERVICE_ACCESS, TOPOLOGY_ADMIN_USER } from './access';
export * from './quiet-hours';
export { isKnownTimeZone, nextLocalTime, previousLocalTime } from './local-time';
export { isTimeZone } from './formats';
