import type { ErrorClassifier } from '@community/messaging';
import { SmtpPermanentError, toSmtpError } from './errors';

/**
 * The messaging runtime's view of a raw nodemailer error that reached it unconverted: the same rule
 * as `toSmtpError` (so 503 and provider-level refusals such as EAUTH stay transient, other 5xx are
 * permanent), applied only to errors that carry an SMTP reply or nodemailer's envelope refusal.
 * Everything else `toSmtpError` would call transient, which is the runtime's default anyway, so it
 * is left to the other classifiers.
 */
export const classifySmtpError: ErrorClassifier = (err) => {
  const e = err as { responseCode?: unknown; code?: unknown } | null | undefined;
  if (typeof e?.responseCode !== 'number' && e?.code !== 'EENVELOPE') return undefined;
  return toSmtpError(err) instanceof SmtpPermanentError ? 'permanent' : 'transient';
};
