import type { Logger } from 'pino';
import type { EmailConfig } from '../config';
import type { EmailMetrics } from '../metrics';
import { ProviderBreaker } from './breaker';
import type { ProviderName } from './provider-name';
import { SmtpProviders, type SmtpProvider } from './providers';
import { createRateLimiter, type RateLimiter } from './rate-limiter';
import { createSender, type Sender } from './sender';
import { createTransport } from './transport';

export interface SmtpStack {
  /** The providers as one breaker (open while every provider's is), with each provider's state. */
  breaker: SmtpProviders;
  /** Rate limit → the attempt's provider (its breaker, its pooled transport): the only way an email leaves the service. */
  sender: Sender;
}

/**
 * The provider side of the service, built from the SMTP_* variables: for SMTP_URL and, when set,
 * SMTP_FALLBACK_URL, a pooled transport and the circuit breaker that probes it; one rate limiter
 * in front of both (SMTP_RATE_PER_SECOND is what this process sends, whichever provider takes
 * it); and the sender that routes each attempt to its provider. A builder of its own so that the
 * benchmark measures exactly the path the service sends through.
 */
export function createSmtpStack(
  config: EmailConfig,
  deps: {
    logger: Logger;
    metrics: EmailMetrics;
    /** The rate limiter's clock (ms); a test drives it by hand. */ rateLimitClock?: () => number;
  },
): SmtpStack {
  const { metrics } = deps;
  metrics.rateLimitPerSecond.set(config.SMTP_RATE_PER_SECOND);
  const limiter = createRateLimiter(config.SMTP_RATE_PER_SECOND, config.SMTP_RATE_BURST, deps.rateLimitClock, {
    granted: (priority) => metrics.rateLimitPermits.inc({ priority }),
    waiting: (priority, count) => metrics.rateLimitWaiting.set({ priority }, count),
  });
  const urls: [ProviderName, string][] = [['primary', config.SMTP_URL]];
  if (config.SMTP_FALLBACK_URL !== undefined) urls.push(['fallback', config.SMTP_FALLBACK_URL]);
  const series = urls.length > 1 ? 'provider' : 'queues';
  const providers = urls.map(([name, url]) => provider(config, deps, limiter, name, url, series));
  const breaker = new SmtpProviders({ providers, metrics, logger: deps.logger.child({ component: 'smtp-providers' }) });
  return { breaker, sender: breaker.sender };
}

function provider(
  config: EmailConfig,
  deps: { logger: Logger; metrics: EmailMetrics },
  limiter: RateLimiter,
  name: ProviderName,
  url: string,
  series: 'queues' | 'provider',
): SmtpProvider {
  const transport = createTransport({
    url,
    poolSize: config.SMTP_POOL_SIZE,
    connectionTimeoutMs: config.SMTP_CONNECTION_TIMEOUT_MS,
    socketTimeoutMs: config.SMTP_SOCKET_TIMEOUT_MS,
  });
  const breaker = new ProviderBreaker({
    threshold: config.SMTP_BREAKER_THRESHOLD,
    probeMinMs: config.SMTP_BREAKER_PROBE_MIN_MS,
    probeMaxMs: config.SMTP_BREAKER_PROBE_MAX_MS,
    probe: () => transport.verify(),
    logger: deps.logger.child({ component: 'smtp-breaker', provider: name }),
    metrics: deps.metrics,
    provider: name,
    series,
  });
  const sender = createSender({
    transport,
    limiter,
    breaker,
    metrics: deps.metrics,
    from: config.EMAIL_FROM,
    provider: name,
  });
  return { name, breaker, sender };
}
