import type { EmailConfig } from '../config';
import type { FlowControl } from '../http/flow-control';
import type { BreakerDescription } from './breaker';
import { providerSeries, type SmtpProviders } from './providers';

/**
 * What GET /v1/flow-control says of the SMTP side: the breaker of the email queues (its state and
 * the queues it pauses while open: with a fallback provider, open while every provider's is) and,
 * with a fallback, each provider's breaker, which alone pauses nothing; and the rate limit (the
 * queues it paces).
 */
export function smtpFlowControl(
  providers: SmtpProviders,
  config: Pick<EmailConfig, 'SMTP_RATE_PER_SECOND'>,
  queues: readonly string[],
): FlowControl {
  const breakers = [entry('email_smtp_breaker_open', providers.describe(), queues)];
  if (providers.hasFallback) {
    for (const [name, d] of Object.entries(providers.describeProviders()) as [
      Parameters<typeof providerSeries>[0],
      BreakerDescription,
    ][]) {
      breakers.push(entry(providerSeries(name), d, []));
    }
  }
  return {
    breakers,
    rateLimits: [{ name: 'SMTP rate limit', perSecond: config.SMTP_RATE_PER_SECOND, queues: [...queues] }],
  };
}

function entry(series: string, d: BreakerDescription, pauses: readonly string[]): FlowControl['breakers'][number] {
  const { state, openForMs, consecutiveFailures, lastError, lastErrorAt } = d;
  return { series, state, openForMs, consecutiveFailures, lastError, lastErrorAt, pauses: [...pauses] };
}
