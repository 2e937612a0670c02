import nodemailer, { type Transporter } from 'nodemailer';

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
  return nodemailer.createTransport({
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
}
