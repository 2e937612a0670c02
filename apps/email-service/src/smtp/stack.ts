import type { Logger } from 'pino';
import type { EmailConfig } from '../config';
import type { EmailMetrics } from '../metrics';
import { CircuitBreaker } from './breaker';
import { createRateLimiter } from './rate-limiter';
import { createSender, type Sender } from './sender';
import { createTransport } from './transport';

export interface SmtpStack {
  breaker: CircuitBreaker;
  /** Rate limit → breaker → pooled transport: the only way an email leaves the service. */
  sender: Sender;
}

/**
 * The provider side of the service, built from the SMTP_* variables: a pooled transport, the
 * circuit breaker that probes it, the rate limiter, and the sender over all three. A builder of its
 * own so that the benchmark measures exactly the path the service sends through.
 */
export function createSmtpStack(
  config: EmailConfig,
  deps: {
    logger: Logger;
    metrics: EmailMetrics;
    /** The rate limiter's clock (ms); a test drives it by hand. */ rateLimitClock?: () => number;
  },
): SmtpStack {
  const transport = createTransport({
    url: config.SMTP_URL,
    poolSize: config.SMTP_POOL_SIZE,
    connectionTimeoutMs: config.SMTP_CONNECTION_TIMEOUT_MS,
    socketTimeoutMs: config.SMTP_SOCKET_TIMEOUT_MS,
  });
  const breaker = new CircuitBreaker({
    threshold: config.SMTP_BREAKER_THRESHOLD,
    probeMinMs: config.SMTP_BREAKER_PROBE_MIN_MS,
    probeMaxMs: config.SMTP_BREAKER_PROBE_MAX_MS,
    probe: () => transport.verify(),
    logger: deps.logger.child({ component: 'smtp-breaker' }),
    metrics: deps.metrics,
  });
  const { metrics } = deps;
  metrics.rateLimitPerSecond.set(config.SMTP_RATE_PER_SECOND);
  const limiter = createRateLimiter(config.SMTP_RATE_PER_SECOND, config.SMTP_RATE_BURST, deps.rateLimitClock, {
    granted: (priority) => metrics.rateLimitPermits.inc({ priority }),
    waiting: (priority, count) => metrics.rateLimitWaiting.set({ priority }, count),
  });
  const sender = createSender({ transport, limiter, breaker, metrics: deps.metrics, from: config.EMAIL_FROM });
  return { breaker, sender };
}
