import type { Transporter } from 'nodemailer';
import type { SendPriority } from '../domain/lanes';
import type { EmailMetrics } from '../metrics';
import type { ProviderBreaker } from './breaker';
import { SmtpAbortedError, SmtpPermanentError, SmtpTransientError, toSmtpError } from './errors';
import type { ProviderName } from './provider-name';
import type { RateLimiter } from './rate-limiter';
import { type HandOver, wholeMessageHandedOver } from './transport';

/** A rendered email. Every header value in here is already free of CR/LF (templates/escape.ts). */
export interface OutgoingEmail {
  /** `<...@...>`, derived from the ledger key (message-id.ts). */
  messageId: string;
  to: { name: string; address: string };
  subject: string;
  text: string;
  html: string;
  headers: Record<string, string>;
  /** 'critical' (a security alert) takes the next rate-limit slot ahead of regular email. */
  priority?: SendPriority;
}

export interface SendResult {
  /** The server's final reply, e.g. `250 OK: queued as 1234`. */
  response: string;
  /** The provider that accepted it. */
  provider: ProviderName;
}

export interface Sender {
  /**
   * Waits for the rate limit, sends through `provider` (the one the ledger bound this attempt to;
   * default: the primary), and reports the outcome to that provider's breaker. Throws
   * SmtpPermanentError (5xx) or SmtpTransientError (4xx, connection, timeout; `outcomeUnknown`
   * when the whole message went out and no reply came; SmtpProviderUnavailableError when that
   * provider's breaker is open, with nothing sent).
   */
  send(
    mail: OutgoingEmail,
    channel: 'immediate' | 'digest',
    signal?: AbortSignal,
    provider?: ProviderName,
  ): Promise<SendResult>;
  close(): void;
}

export interface SenderDeps {
  transport: Transporter;
  limiter: RateLimiter;
  /** Told about every outcome; absent only in the benchmark's bare path. */
  breaker?: ProviderBreaker;
  metrics: EmailMetrics;
  from: string;
  /** The provider behind `transport`. Default 'primary'. */
  provider?: ProviderName;
}

/** One provider's sender: rate limit → its pooled transport, outcomes to its breaker. */
export function createSender(deps: SenderDeps): Sender {
  const { transport, limiter, metrics, from } = deps;
  const provider = deps.provider ?? 'primary';
  return {
    async send(mail, channel, signal) {
      const waitStarted = performance.now();
      await limiter.acquire(signal, mail.priority ?? 'regular');
      metrics.rateLimitWait.observe((performance.now() - waitStarted) / 1000);
      const stopTimer = metrics.sendDuration.startTimer({ channel });
      const handOver: HandOver = { streams: [] };
      try {
        const info = await transport.sendMail({
          from,
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          headers: mail.headers,
          messageId: mail.messageId,
          signal,
          handOver,
        } as Parameters<Transporter['sendMail']>[0]);
        deps.breaker?.recordSuccess();
        metrics.sends.inc({ channel, outcome: 'sent', provider });
        return { response: String((info as { response?: unknown }).response ?? ''), provider };
      } catch (err) {
        // Our own abort (handler deadline, forced shutdown) may surface as EABORT or, if it cut a
        // socket mid-exchange, as a connection error: either way the provider did nothing wrong.
        const smtpErr = asAbortedIf(signal?.aborted === true, toSmtpError(err));
        // No reply to a message the server had whole: it may have been accepted (docs/EMAIL.md,
        // "Two providers"). A reply, any reply, settles it: 4xx and 5xx mean not accepted.
        if (
          smtpErr instanceof SmtpTransientError &&
          smtpErr.responseCode === undefined &&
          wholeMessageHandedOver(handOver)
        ) {
          smtpErr.outcomeUnknown = true;
        }
        if (smtpErr instanceof SmtpAbortedError) {
          metrics.sends.inc({ channel, outcome: 'aborted', provider });
        } else if (smtpErr instanceof SmtpPermanentError) {
          // A definitive refusal of this message means the provider is up: not a breaker failure.
          deps.breaker?.recordSuccess();
          metrics.sends.inc({ channel, outcome: 'permanent', provider });
        } else {
          deps.breaker?.recordFailure(smtpErr);
          metrics.sends.inc({ channel, outcome: 'transient', provider });
        }
        throw smtpErr;
      } finally {
        stopTimer();
      }
    },
    close() {
      transport.close();
    },
  };
}

/** A transient failure seen after our signal aborted is the abort's doing; a 5xx stays what it is. */
function asAbortedIf(
  aborted: boolean,
  err: SmtpPermanentError | SmtpTransientError,
): SmtpPermanentError | SmtpTransientError {
  if (!aborted || err instanceof SmtpPermanentError || err instanceof SmtpAbortedError) return err;
  return new SmtpAbortedError(`SMTP send aborted (handler deadline or shutdown): ${err.message}`);
}
