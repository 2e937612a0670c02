import { PermanentError, TransientError } from '@community/messaging';

/**
 * SMTP failures, classified once, here, by reply code and nodemailer's error code (never by text).
 * The message carries the server's reply verbatim, so a dead-lettered message says what the
 * provider answered (`x-error-message`).
 */

/** The provider refused this message for good (5xx, RFC 5321 "permanent negative completion"). */
export class SmtpPermanentError extends PermanentError {
  override name = 'SmtpPermanentError';
  constructor(
    readonly responseCode: number,
    readonly reply: string,
    readonly command?: string,
  ) {
    super(`SMTP ${command ?? 'reply'} refused with ${responseCode}: ${reply}`, 'SMTP_PERMANENT');
  }
}

/**
 * Try again later: a 4xx reply, a refused or dropped connection, a timeout. Each one counts as a
 * provider failure for the circuit breaker.
 */
export class SmtpTransientError extends TransientError {
  override name = 'SmtpTransientError';
  /**
   * True when the whole message had been handed to the server and no reply to it came (a timeout
   * or a dropped connection after the end of DATA, or our own abort then): the provider may have
   * accepted it. Set by the sender (smtp/sender.ts), which alone knows how far the exchange got.
   * Such an email is retried through the same provider only (docs/EMAIL.md, "Two providers").
   */
  outcomeUnknown = false;
  constructor(
    message: string,
    readonly responseCode?: number,
    readonly smtpCode?: string,
  ) {
    super(message, 'SMTP_TRANSIENT');
  }
}

/**
 * The send was cancelled by us (the handler deadline or a forced shutdown aborted its signal):
 * nodemailer's `EABORT`. Transient for the message (it takes its retry tier), but it says nothing
 * about the provider, so the breaker never counts it.
 */
export class SmtpAbortedError extends SmtpTransientError {
  override name = 'SmtpAbortedError';
  constructor(message: string) {
    super(message, undefined, 'EABORT');
  }
}

/**
 * Not attempted: the provider this attempt is bound to has its breaker open (or is not configured
 * in this process). Nothing reached any server; the attempt is given back (ledger.release with
 * refundAttempt) and the message waits for that provider, never for another one.
 */
export class SmtpProviderUnavailableError extends SmtpTransientError {
  override name = 'SmtpProviderUnavailableError';
  constructor(
    readonly provider: string,
    reason: string,
  ) {
    super(`SMTP provider ${provider} unavailable: ${reason}`, undefined, 'EPROVIDER');
  }
}

/** The breaker is open and stayed open longer than a message may be held (or the service stops). */
export class BreakerOpenError extends TransientError {
  override name = 'BreakerOpenError';
  constructor(reason: string) {
    super(`SMTP circuit breaker open: ${reason}`, 'SMTP_BREAKER_OPEN');
  }
}

interface NodemailerError {
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
  message?: string;
}

// Errors about the provider or our account with it, not about this message: retrying the message
// elsewhere would get the same answer, but so would every other message. They go to the breaker,
// not the DLQ, even when the reply is 5xx (a 535 on AUTH would otherwise dead-letter everything).
// EABORT is not among them: nodemailer raises it only when our own signal aborts the send.
const PROVIDER_CODES = new Set([
  'ECONNECTION',
  'ETIMEDOUT',
  'ESOCKET',
  'EDNS',
  'ETLS',
  'EAUTH',
  'ENOAUTH',
  'EPROXY',
  'EPROTOCOL',
]);

export function toSmtpError(err: unknown): SmtpPermanentError | SmtpTransientError {
  if (err instanceof SmtpPermanentError || err instanceof SmtpTransientError) return err;
  const e = (err ?? {}) as NodemailerError;
  const reply = (e.response ?? e.message ?? String(err)).trim();
  if (e.code === 'EABORT') return new SmtpAbortedError(`SMTP send aborted (handler deadline or shutdown): ${reply}`);
  const code = typeof e.responseCode === 'number' ? e.responseCode : undefined;
  const providerLevel = e.code !== undefined && PROVIDER_CODES.has(e.code);
  // 503 (bad sequence of commands) is about the session, not the message: a new connection fixes it.
  if (code !== undefined && code >= 500 && code < 600 && code !== 503 && !providerLevel) {
    return new SmtpPermanentError(code, reply, e.command);
  }
  // nodemailer refuses an envelope it cannot build (no valid recipient) before talking to anyone.
  if (code === undefined && e.code === 'EENVELOPE') return new SmtpPermanentError(0, reply, 'envelope');
  const what = code !== undefined ? `${code}: ${reply}` : `${e.code ?? 'error'}: ${reply}`;
  return new SmtpTransientError(`SMTP ${e.command ?? 'transport'} failed, ${what}`, code, e.code);
}
