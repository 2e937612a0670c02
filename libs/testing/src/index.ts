export * from './amqp';
export * from './logger';
export * from './db';
