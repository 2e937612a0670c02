export * from './envelope';
export * from './events';
export * from './errors';
export * from './validate';
export * from './build';
export * from './idempotency-keys';
export * from './preferences';
