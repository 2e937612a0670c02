import type { EmailConfig } from '../config';
import type { FlowControl } from '../http/flow-control';
import type { CircuitBreaker } from './breaker';

/**
 * What GET /v1/flow-control says of the SMTP side: the breaker (its state and the queues it
 * pauses while open) and the rate limit (the queues it paces).
 */
export function smtpFlowControl(
  breaker: CircuitBreaker,
  config: Pick<EmailConfig, 'SMTP_RATE_PER_SECOND'>,
  queues: readonly string[],
): FlowControl {
  const { state, openForMs, consecutiveFailures, lastError, lastErrorAt } = breaker.describe();
  return {
    breakers: [
      {
        series: 'email_smtp_breaker_open',
        state,
        openForMs,
        consecutiveFailures,
        lastError,
        lastErrorAt,
        pauses: [...queues],
      },
    ],
    rateLimits: [{ name: 'SMTP rate limit', perSecond: config.SMTP_RATE_PER_SECOND, queues: [...queues] }],
  };
}
