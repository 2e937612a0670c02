import { EMAIL_CONFIG_SPEC } from '../config';
import { sendHandlerTimeoutMs } from './policy';

function defaultOf(name: 'SMTP_BREAKER_MAX_HOLD_MS' | 'EMAIL_LEASE_MS'): number {
  const entry: { name: string; default?: unknown } | undefined = EMAIL_CONFIG_SPEC.find((e) => e.name === name);
  if (typeof entry?.default !== 'number') throw new Error(`email-service has no numeric default for ${name}`);
  return entry.default;
}

/**
 * The send consumer's deadline with this service's defaults (870 s): the longest handler deadline of
 * any inbox consumer, which the reconciler's inbox horizon check takes as the default of its
 * INBOX_HANDLER_TIMEOUT_MAX_MS, so the figure is written once, here.
 */
export const DEFAULT_SEND_HANDLER_TIMEOUT_MS = sendHandlerTimeoutMs({
  SMTP_BREAKER_MAX_HOLD_MS: defaultOf('SMTP_BREAKER_MAX_HOLD_MS'),
  EMAIL_LEASE_MS: defaultOf('EMAIL_LEASE_MS'),
});
