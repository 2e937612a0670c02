export * from './amqp';
export * from './logger';
export * from './db';
export * from './db-faults';
export * from './tcp-proxy';
export * from './names';
export * from './tokens';
export * from './net';
