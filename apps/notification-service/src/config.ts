import {
  commonConfig,
  ConfigError,
  DEV_EMAIL_SERVICE_VERIFY_KEY,
  DEV_PUSH_SERVICE_VERIFY_KEY,
  ed25519KeyIssue,
  loadConfig,
  type ConfigOf,
  type ConfigSpec,
} from '@community/config';

/** Where FAULT_CRASH_AT may kill the process: after the commit, after half the confirms, after all of them (before the ack). */
export const EMISSION_CRASH_POINTS = ['none', 'after-commit', 'after-some-confirms', 'after-confirms'] as const;
export type EmissionCrashPoint = (typeof EMISSION_CRASH_POINTS)[number];

/** Names this service everywhere: logs, metrics, the AMQP connection, the outbox producer. */
export const SERVICE_NAME = 'notification-service';

/** The shared variables (docs/CONTRACT.md "Configuration") plus this service's tunables. */
export const NOTIFICATION_CONFIG = [
  ...commonConfig(SERVICE_NAME),
  {
    name: 'DATABASE_POOL_MAX',
    kind: 'int',
    default: 10,
    min: 2,
    max: 200,
    description: 'pg pool size (consumers + HTTP + relay)',
  },
  {
    name: 'CONSUMER_BATCH_SIZE',
    kind: 'int',
    default: 250,
    min: 1,
    max: 2000,
    description: 'events committed per transaction (the throughput lever: one transaction per event caps near 3 k/s)',
  },
  {
    name: 'CONSUMER_BATCH_WAIT_MS',
    kind: 'duration-ms',
    // 10, not 5: at 1,000 events/s half as many batches (each four PostgreSQL round trips and a
    // round of confirms) took the machine from ~85 % to ~72 % busy and p99 from ~55 to ~35 ms
    // (docs/BENCHMARKS.md, 2026-12-07); a lone event waits 5 ms longer.
    default: 10,
    min: 1,
    max: 1000,
    description: 'longest a message waits for its batch to fill: bounds the latency added at low rates',
  },
  {
    name: 'CONSUMER_BATCH_CONCURRENCY',
    kind: 'int',
    default: 2,
    min: 1,
    max: 16,
    description: 'batches in flight per queue',
  },
  {
    name: 'CONSUMER_PARTITION_BY_USER',
    kind: 'bool',
    default: true,
    description:
      "one batch lane per unit of CONSUMER_BATCH_CONCURRENCY, an event in its recipient's lane: a consumer's concurrent batches never wait on each other's counter-row locks",
  },
  {
    name: 'SSE_HEARTBEAT_MS',
    kind: 'duration-ms',
    default: 15_000,
    min: 100,
    description: 'heartbeat comment interval on SSE streams',
  },
  // A stream holds a connection, a write buffer (up to 1 MiB) and a share of the LISTEN fan-out:
  // bounded per inbox and per replica (sse/hub.ts). Over them: 429 / 503 with Retry-After.
  {
    name: 'SSE_MAX_STREAMS_PER_USER',
    kind: 'int',
    default: 5,
    min: 1,
    max: 1000,
    description: 'SSE streams of one inbox a replica holds at most (a tab each); the next is refused 429',
  },
  {
    name: 'SSE_MAX_STREAMS',
    kind: 'int',
    default: 5000,
    min: 1,
    max: 1_000_000,
    description: 'SSE streams a replica holds at most; the next is refused 503 (another replica may have room)',
  },
  // email-service's public key (Ed25519, PEM): its service tokens may read preferences and turn
  // email channels off, nothing else (docs/EMAIL.md "Secrets").
  {
    name: 'EMAIL_SERVICE_VERIFY_KEY',
    kind: 'string',
    default: DEV_EMAIL_SERVICE_VERIFY_KEY,
    refuseDefaultInProduction: true,
    description: "email-service's Ed25519 public key (PEM) for its opt-out and read-state service tokens",
  },
  // push-service's public key (Ed25519, PEM): its service tokens may ask POST
  // /v1/internal/read-state which notifications the user has read, nothing else
  // (docs/NOTIFICATIONS.md "Delivery timing").
  {
    name: 'PUSH_SERVICE_VERIFY_KEY',
    kind: 'string',
    default: DEV_PUSH_SERVICE_VERIFY_KEY,
    refuseDefaultInProduction: true,
    description: "push-service's Ed25519 public key (PEM) for its read-state service tokens",
  },
  // Fault injection for the kill -9 tests of emission (test/emission-crash.test.ts,
  // docs/NOTIFICATIONS.md "Emission"): the process SIGKILLs itself at that point of a batch that
  // has something to emit. Refused when NODE_ENV=production.
  {
    name: 'FAULT_CRASH_AT',
    kind: 'enum',
    values: EMISSION_CRASH_POINTS,
    default: 'none',
    description:
      'test only: SIGKILL the process at this point of a batch (after-commit, after-some-confirms, after-confirms)',
  },
] as const satisfies ConfigSpec;

export type NotificationConfig = ConfigOf<typeof NOTIFICATION_CONFIG>;

export function loadNotificationConfig(env: Record<string, string | undefined> = process.env): NotificationConfig {
  // Inbox retention (processed_events) runs in the reconciler (docs/RECONCILER.md "Retention").
  const config = loadConfig(NOTIFICATION_CONFIG, env);
  const issues = [
    ed25519KeyIssue('EMAIL_SERVICE_VERIFY_KEY', 'public', config.EMAIL_SERVICE_VERIFY_KEY),
    ed25519KeyIssue('PUSH_SERVICE_VERIFY_KEY', 'public', config.PUSH_SERVICE_VERIFY_KEY),
  ].filter((i) => i !== undefined);
  if (config.FAULT_CRASH_AT !== 'none' && env['NODE_ENV'] === 'production')
    issues.push({
      name: 'FAULT_CRASH_AT',
      message: 'FAULT_CRASH_AT: fault injection is refused when NODE_ENV=production (expected it unset or none)',
    });
  if (issues.length) throw new ConfigError(issues);
  return config;
}
