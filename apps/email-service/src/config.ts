import {
  AUTH_VARIABLES,
  commonConfig,
  ConfigError,
  DEV_EMAIL_SERVICE_SIGNING_KEY,
  DEV_UNSUBSCRIBE_TOKEN_SECRET,
  ed25519KeyIssue,
  loadConfig,
  type ConfigOf,
} from '@community/config';
import { emailRetentionIssues } from './retention/policy';

const HTTP = ['http:', 'https:'];

/** Names this service everywhere: logs, metrics, the AMQP connection, the pg application_name. */
export const SERVICE_NAME = 'email-service';

/** Everything email-service reads from the environment (common entries first). */
export const EMAIL_CONFIG_SPEC = [
  // Every common variable but the bearer-token ones (JWT_SECRET, ADMIN_KEYS, …): email-service has
  // no authenticated route and signs nothing with JWT_SECRET (below).
  ...commonConfig(SERVICE_NAME).filter(
    (v): v is Exclude<typeof v, { name: (typeof AUTH_VARIABLES)[number] }> =>
      !(AUTH_VARIABLES as readonly string[]).includes(v.name),
  ),
  // Optional: only verifies version 1 unsubscribe links (docs/EMAIL.md "Secrets"). Retired once
  // UNSUBSCRIBE_LEGACY_TOKENS_UNTIL has passed: then leave it unset.
  {
    name: 'JWT_SECRET',
    kind: 'string',
    optional: true,
    secret: true,
    description: 'verifies version 1 unsubscribe links only; signs nothing',
  },
  // The private half of email-service's service-token key pair (Ed25519, PEM): signs the opt-out
  // calls to notification-service, which holds the public half (EMAIL_SERVICE_VERIFY_KEY).
  {
    name: 'EMAIL_SERVICE_SIGNING_KEY',
    kind: 'string',
    default: DEV_EMAIL_SERVICE_SIGNING_KEY,
    secret: true,
    refuseDefaultInProduction: true,
    description: 'Ed25519 private key (PEM) of the opt-out service tokens',
  },
  // Links in emails point to the community site; unsubscribe links to this service. The defaults
  // are a laptop's: in production both must be set, to absolute https URLs (checked below), or
  // every email would link to 127.0.0.1 and one-click unsubscribe (RFC 8058) would break.
  {
    name: 'PUBLIC_BASE_URL',
    kind: 'url',
    default: 'http://127.0.0.1:3000',
    protocols: HTTP,
    refuseDefaultInProduction: true,
    description: 'the community site as users reach it (links to notifications); https in production',
  },
  {
    name: 'UNSUBSCRIBE_BASE_URL',
    kind: 'url',
    default: 'http://127.0.0.1:3002',
    protocols: HTTP,
    refuseDefaultInProduction: true,
    description: 'this service as users reach it (unsubscribe links); https in production',
  },
  { name: 'NOTIFICATION_SERVICE_URL', kind: 'url', default: 'http://127.0.0.1:3001', protocols: HTTP },
  { name: 'EMAIL_FROM', kind: 'string', default: 'Community <notifications@community.local>', minLength: 3 },

  // Unsubscribe links (docs/EMAIL.md "Unsubscribe"): signed with a key of their own, so signing
  // them needs no JWT_SECRET, and valid this many days after the email was composed.
  {
    name: 'UNSUBSCRIBE_TOKEN_SECRET',
    kind: 'string',
    default: DEV_UNSUBSCRIBE_TOKEN_SECRET,
    minLength: 32,
    secret: true,
    refuseDefaultInProduction: true,
    description: 'HMAC key of unsubscribe links; not JWT_SECRET',
  },
  {
    name: 'UNSUBSCRIBE_TOKEN_TTL_DAYS',
    kind: 'int',
    default: 60,
    min: 1,
    max: 3650,
    description: 'days an unsubscribe link works',
  },
  // Links sent before links expired (version 1, no expiry) work until this instant (ISO 8601), then
  // answer "expired"; unset: they answer "expired" now.
  {
    name: 'UNSUBSCRIBE_LEGACY_TOKENS_UNTIL',
    kind: 'string',
    optional: true,
    description: 'ISO 8601 instant until which pre-expiry unsubscribe links are honoured',
  },

  // A second provider (docs/EMAIL.md "Two providers"): takes new sends while SMTP_URL's breaker is
  // open. Another server than SMTP_URL (checked below). Unset: one provider, as before.
  {
    name: 'SMTP_FALLBACK_URL',
    kind: 'url',
    optional: true,
    protocols: ['smtp:', 'smtps:'],
    description: "a second SMTP provider, used while SMTP_URL's circuit breaker is open",
  },
  // The provider's limits. 0 disables the rate limit (a local sink, benchmarks).
  { name: 'SMTP_RATE_PER_SECOND', kind: 'int', default: 20, min: 0 },
  { name: 'SMTP_RATE_BURST', kind: 'int', default: 1, min: 1 },
  { name: 'SMTP_POOL_SIZE', kind: 'int', default: 5, min: 1, max: 100 },
  { name: 'SMTP_CONNECTION_TIMEOUT_MS', kind: 'duration-ms', default: 10_000, min: 100 },
  { name: 'SMTP_SOCKET_TIMEOUT_MS', kind: 'duration-ms', default: 30_000, min: 100 },

  // Circuit breaker: opens after this many consecutive transient provider failures, then probes
  // with exponential backoff between MIN and MAX until a probe succeeds.
  { name: 'SMTP_BREAKER_THRESHOLD', kind: 'int', default: 5, min: 1 },
  { name: 'SMTP_BREAKER_PROBE_MIN_MS', kind: 'duration-ms', default: 1_000, min: 10 },
  { name: 'SMTP_BREAKER_PROBE_MAX_MS', kind: 'duration-ms', default: 30_000, min: 10 },
  // How long an in-flight message may wait for the breaker to close before it goes to a retry
  // tier after all. Below RabbitMQ's consumer_timeout (30 min), which would close the channel.
  { name: 'SMTP_BREAKER_MAX_HOLD_MS', kind: 'duration-ms', default: 600_000, min: 100, max: 1_200_000 },

  // A 'sending' ledger row older than this is presumed abandoned (crash) and re-attempted with the
  // same Message-ID. Must exceed the longest possible SMTP exchange (checked below).
  { name: 'EMAIL_LEASE_MS', kind: 'duration-ms', default: 120_000, min: 100 },
  // Each process beats in email_service_instances this often; a lease whose holder has not beaten
  // for EMAIL_HOLDER_DEAD_AFTER_MS is taken over at once (docs/EMAIL.md "A dead holder's lease").
  { name: 'EMAIL_HEARTBEAT_INTERVAL_MS', kind: 'duration-ms', default: 5_000, min: 100, max: 60_000 },
  { name: 'EMAIL_HOLDER_DEAD_AFTER_MS', kind: 'duration-ms', default: 20_000, min: 300, max: 600_000 },
  { name: 'EMAIL_CONSUMER_CONCURRENCY', kind: 'int', default: 16, min: 1, max: 1000 },
  // A notification for a user whose address has not arrived yet is retried for this long (the
  // user.upserted event travels on another queue), then recorded as undeliverable.
  { name: 'USER_ADDRESS_GRACE_MS', kind: 'duration-ms', default: 300_000, min: 0 },

  { name: 'DIGEST_PERIOD', kind: 'enum', values: ['daily', 'hourly'], default: 'daily' },
  // Daily digests go out at this hour of each user's own time zone (user.upserted's timezone, UTC
  // when absent); 0 is what daily digests did before time zones (UTC midnight). Hourly digests stay
  // UTC-aligned. docs/EMAIL.md "Delivery timing".
  {
    name: 'DIGEST_LOCAL_HOUR',
    kind: 'int',
    default: 0,
    min: 0,
    max: 23,
    description: "the hour (0-23) of the user's own time zone at which the daily digest goes out",
  },
  // Delay-then-check (docs/EMAIL.md "Delivery timing"): a non-critical immediate email waits this
  // long after it arrived, then goes out only if the user has not read it in the app meanwhile
  // (notification-service's read state). 0: sent at once, no check. Security alerts never wait.
  {
    name: 'EMAIL_READ_CHECK_DELAY_MS',
    kind: 'duration-ms',
    default: 0,
    min: 0,
    max: 3_600_000,
    description: 'hold a non-critical immediate email this long, then skip it if read in the app (0: off)',
  },
  {
    name: 'EMAIL_READ_CHECK_TIMEOUT_MS',
    kind: 'duration-ms',
    default: 2_000,
    min: 100,
    max: 30_000,
    description: "the read-state call's budget; a check that fails or times out sends the email anyway",
  },
  { name: 'DIGEST_FLUSH_INTERVAL_MS', kind: 'duration-ms', default: 60_000, min: 10 },
  { name: 'DIGEST_MAX_ATTEMPTS', kind: 'int', default: 8, min: 1 },
  { name: 'DIGEST_BATCH_SIZE', kind: 'int', default: 100, min: 1, max: 10_000 },

  // Retention (docs/EMAIL.md "Retention"): the reconciler deletes finished ledger rows and closed
  // digest windows older than this many days (its own EMAIL_RETENTION_DAYS, which must be the same
  // value); notification.created events older than that (less a margin) are refused here.
  // Checked below against the longest redelivery of the email queues.
  { name: 'EMAIL_RETENTION_DAYS', kind: 'int', default: 30, min: 2, max: 3650 },
] as const;

export type EmailConfig = ConfigOf<typeof EMAIL_CONFIG_SPEC>;

export function loadEmailConfig(env: Record<string, string | undefined> = process.env): EmailConfig {
  const config = loadConfig(EMAIL_CONFIG_SPEC, env);
  const issues = [];
  // The lease must outlive a slow but alive send, or a second sender would take the row over while
  // the first one is still talking to the server: a duplicate with no crash at all.
  const longestSend = config.SMTP_CONNECTION_TIMEOUT_MS * 2 + config.SMTP_SOCKET_TIMEOUT_MS;
  if (config.EMAIL_LEASE_MS <= longestSend) {
    issues.push({
      name: 'EMAIL_LEASE_MS',
      message: `EMAIL_LEASE_MS: ${config.EMAIL_LEASE_MS} must exceed the longest SMTP exchange, 2 × SMTP_CONNECTION_TIMEOUT_MS + SMTP_SOCKET_TIMEOUT_MS = ${longestSend}`,
    });
  }
  // Three missed beats at least: one slow heartbeat write (a loaded database) must not make a live
  // sender look dead, which would be a duplicate with no crash at all.
  if (config.EMAIL_HOLDER_DEAD_AFTER_MS < 3 * config.EMAIL_HEARTBEAT_INTERVAL_MS) {
    issues.push({
      name: 'EMAIL_HOLDER_DEAD_AFTER_MS',
      message: `EMAIL_HOLDER_DEAD_AFTER_MS: ${config.EMAIL_HOLDER_DEAD_AFTER_MS} must be at least 3 × EMAIL_HEARTBEAT_INTERVAL_MS = ${3 * config.EMAIL_HEARTBEAT_INTERVAL_MS}`,
    });
  }
  if (config.SMTP_BREAKER_PROBE_MAX_MS < config.SMTP_BREAKER_PROBE_MIN_MS) {
    issues.push({
      name: 'SMTP_BREAKER_PROBE_MAX_MS',
      message: 'SMTP_BREAKER_PROBE_MAX_MS: must be >= SMTP_BREAKER_PROBE_MIN_MS',
    });
  }
  if (
    config.SMTP_FALLBACK_URL !== undefined &&
    smtpEndpoint(config.SMTP_FALLBACK_URL) === smtpEndpoint(config.SMTP_URL)
  ) {
    issues.push({
      name: 'SMTP_FALLBACK_URL',
      message: `SMTP_FALLBACK_URL: must be another server than SMTP_URL (both are ${smtpEndpoint(config.SMTP_URL)}): a provider cannot be its own fallback`,
    });
  }
  if (config.UNSUBSCRIBE_TOKEN_SECRET === config.JWT_SECRET) {
    issues.push({
      name: 'UNSUBSCRIBE_TOKEN_SECRET',
      message: 'UNSUBSCRIBE_TOKEN_SECRET: must differ from JWT_SECRET (a key of its own is the point of it)',
    });
  }
  if (config.UNSUBSCRIBE_LEGACY_TOKENS_UNTIL !== undefined && legacyTokensUntil(config) === undefined) {
    issues.push({
      name: 'UNSUBSCRIBE_LEGACY_TOKENS_UNTIL',
      message: 'UNSUBSCRIBE_LEGACY_TOKENS_UNTIL: expected an ISO 8601 instant such as 2027-02-01T00:00:00Z',
    });
  }
  if (config.UNSUBSCRIBE_LEGACY_TOKENS_UNTIL !== undefined && config.JWT_SECRET === undefined) {
    issues.push({
      name: 'JWT_SECRET',
      message:
        'JWT_SECRET: required while UNSUBSCRIBE_LEGACY_TOKENS_UNTIL is set (it verifies version 1 unsubscribe links); unset both once that date has passed',
    });
  }
  if (env['NODE_ENV'] === 'production') {
    for (const name of ['PUBLIC_BASE_URL', 'UNSUBSCRIBE_BASE_URL'] as const) {
      if (new URL(config[name]).protocol !== 'https:') {
        issues.push({
          name,
          message: `${name}: must be an https URL when NODE_ENV=production (it is written into every email: users open it, mail clients post one-click unsubscribes to it)`,
        });
      }
    }
  }
  const keyIssue = ed25519KeyIssue('EMAIL_SERVICE_SIGNING_KEY', 'private', config.EMAIL_SERVICE_SIGNING_KEY);
  if (keyIssue) issues.push(keyIssue);
  issues.push(...emailRetentionIssues(config));
  if (issues.length > 0) throw new ConfigError(issues);
  return config;
}

/**
 * The server an SMTP URL reaches (scheme, host, port with its default), credentials aside: two URLs
 * with other credentials for the same server are still one provider.
 */
function smtpEndpoint(raw: string): string {
  const url = new URL(raw);
  const port = url.port || (url.protocol === 'smtps:' ? '465' : '25');
  return `${url.protocol}//${url.hostname.toLowerCase()}:${port}`;
}

/** UNSUBSCRIBE_LEGACY_TOKENS_UNTIL as a date (undefined when unset or not an ISO 8601 instant). */
export function legacyTokensUntil(config: Pick<EmailConfig, 'UNSUBSCRIBE_LEGACY_TOKENS_UNTIL'>): Date | undefined {
  const raw = config.UNSUBSCRIBE_LEGACY_TOKENS_UNTIL;
  if (raw === undefined || !/^\d{4}-\d{2}-\d{2}T/.test(raw)) return undefined;
  const ms = Date.parse(raw);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}
