import type { Readable } from 'node:stream';
import nodemailer, { type Transporter } from 'nodemailer';
import type MailMessage from 'nodemailer/lib/mailer/mail-message';

export interface TransportOptions {
  /** SMTP_URL, e.g. smtp://127.0.0.1:1025 or smtps://user:pass@smtp.example.com:465 */
  url: string;
  poolSize: number;
  connectionTimeoutMs: number;
  socketTimeoutMs: number;
}

/**
 * nodemailer's pooled SMTP transport: `poolSize` long-lived connections, messages queued
 * between them. Rate limiting is ours (rate-limiter.ts), not the pool's `rateLimit`.
 *
 * Timeouts are explicit because nodemailer's defaults (2 min to connect, 10 min of socket
 * inactivity) would hold a message far past its handler deadline and the ledger lease.
 */
export function createTransport(options: TransportOptions): Transporter {
  const url = new URL(options.url);
  const transport = nodemailer.createTransport({
    pool: true,
    host: url.hostname,
    port: url.port ? Number(url.port) : url.protocol === 'smtps:' ? 465 : 25,
    secure: url.protocol === 'smtps:',
    auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
    maxConnections: options.poolSize,
    // A connection is reused until the server or the idle timer closes it; nodemailer's default
    // (100 messages) would reconnect every 100 sends for no benefit to us.
    maxMessages: Infinity,
    connectionTimeout: options.connectionTimeoutMs,
    greetingTimeout: options.connectionTimeoutMs,
    socketTimeout: options.socketTimeoutMs,
    // One requeue covers the benign case (the server closed an idle pooled connection just as a
    // message was handed to it); anything more is an outage, which the breaker handles.
    maxRequeues: 1,
    // Templates never reference files or URLs; refuse them so user data cannot make us fetch one.
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false,
  } as Parameters<typeof nodemailer.createTransport>[0]);
  transport.use('stream', recordMessageStreams);
  return transport;
}

/**
 * How far one send got, for telling "not sent" from "maybe sent" when it fails without a reply.
 * Passed in the send's options as `handOver`; the transport records there every stream of the
 * message it opens for that send (a pooled send may be requeued onto another connection once).
 */
export interface HandOver {
  streams: Readable[];
}

/**
 * True when a whole copy of the message went to the server: a stream of it was read to its end.
 * nodemailer reads the message only after the server's 354 reply to DATA and writes the
 * terminating `<CRLF>.<CRLF>` only after the last byte of it, so a stream not read to the end means
 * the server holds at most a partial message, which it discards: that send certainly did not go
 * out. (nodemailer's pool uses the same fact, `readableDidRead`, to requeue a message safely.)
 */
export function wholeMessageHandedOver(handOver: HandOver): boolean {
  return handOver.streams.some((s) => s.readableEnded);
}

/** The 'stream' plugin (run for each message just before the transport sends it). */
function recordMessageStreams(mail: MailMessage, done: (err?: Error | null) => void): void {
  const handOver = (mail.data as { handOver?: HandOver }).handOver;
  if (handOver) {
    const message = mail.message;
    const create = message.createReadStream.bind(message);
    message.createReadStream = (...args: Parameters<typeof create>) => {
      const stream = create(...args);
      handOver.streams.push(stream);
      return stream;
    };
  }
  done();
}
