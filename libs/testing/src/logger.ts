import pino, { type Logger } from 'pino';

/** Silent unless TEST_LOG_LEVEL is set (e.g. TEST_LOG_LEVEL=debug npm test -- libs/messaging). */
export function testLogger(name = 'test'): Logger {
  return pino({ name, level: process.env.TEST_LOG_LEVEL ?? 'silent' });
}
