export * from './envelope';
export * from './events';
export * from './errors';
export * from './validate';
export * from './build';
export * from './idempotency-keys';
export * from './preferences';
export * from './notification-rules';
export { COMMUNITY_TOPOLOGY, EVENTS_EXCHANGE, RECONCILER_LOW_PRIORITY_QUEUE, RECONCILER_RECOUNT_TYPE } from './topology';
