export * from './envelope';
export * from './events';
export * from './errors';
export * from './validate';
export * from './build';
export * from './idempotency-keys';
export * from './preferences';
export { COMMUNITY_TOPOLOGY, EVENTS_EXCHANGE, NOTIFICATION_TYPE_HEADER, NOTIFICATIONS_BY_TYPE_EXCHANGE, notificationHeaders } from './topology';
