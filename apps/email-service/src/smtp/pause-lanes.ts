import type { Consumer } from '@community/messaging';
import type { Logger } from 'pino';
import type { CircuitBreaker } from './breaker';

/**
 * While the SMTP breaker is open, the SMTP-bound consumers (both lanes) pause: their messages wait in
 * the queue instead of failing into retries. The user projection and any other consumer on the same
 * connection keep going. Transitions are serialised: a close that follows an open quickly resumes
 * after the pause finished, not before. `settled()` is the last transition (stop() waits for it).
 */
export function pauseLanesWhileOpen(
  breaker: CircuitBreaker,
  lanes: readonly Consumer[],
  logger: Logger,
): { settled(): Promise<void> } {
  let transition = Promise.resolve();
  const enqueue = (what: 'pause' | 'resume') => {
    transition = transition
      .then(() => Promise.all(lanes.map((c) => (what === 'pause' ? c.pause() : c.resume()))))
      .then(() => undefined)
      .catch((err: Error) => logger.error({ err: err.message }, `could not ${what} the email queues`));
  };
  breaker.on('open', () => enqueue('pause'));
  breaker.on('close', () => enqueue('resume'));
  return { settled: () => transition };
}
