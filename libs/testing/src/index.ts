export * from './amqp';
export * from './logger';
export * from './db';
export * from './db-faults';
