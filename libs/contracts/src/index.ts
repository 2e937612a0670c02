export * from './envelope';
export * from './events';
export * from './errors';
export * from './validate';
export * from './build';
export * from './idempotency-keys';
export * from './preferences';
export { COMMUNITY_TOPOLOGY, EVENTS_EXCHANGE } from './topology';
export { COMMUNITY_VHOST, OBSERVER_USERS, SERVICE_ACCESS, TOPOLOGY_ADMIN_USER } from './access';
