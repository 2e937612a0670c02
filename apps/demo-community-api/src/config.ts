import {
  commonConfig,
  ConfigError,
  ed25519KeyIssue,
  loadConfig,
  type ConfigIssue,
  type ConfigOf,
  type ConfigSpec,
} from '@community/config';

/** Names this service everywhere: logs, metrics, the AMQP connection, the pg application_name. */
export const SERVICE_NAME = 'demo-community-api';

/** The scope a service token needs to raise a security alert (POST /v1/security-alerts). */
export const SECURITY_ALERT_SCOPE = 'security-alerts:raise';

/** This app's variables on top of the shared ones (AMQP_URL, DATABASE_URL, PORT, ...). */
export const DEMO_CONFIG = [
  ...commonConfig(SERVICE_NAME),
  {
    name: 'DEMO_TRAFFIC_RATE',
    kind: 'int',
    // Off unless asked for: the generator creates users and makes the pipeline send real email.
    // `npm start` asks for 2/s (scripts/dev/start.mjs); production refuses anything but 0.
    default: 0,
    min: 0,
    max: 10_000,
    description: 'Actions per second of the built-in traffic generator, started after listening (0, the default: off)',
  },
  {
    name: 'SECURITY_ALERTS_ISSUER',
    kind: 'string',
    default: 'community-platform',
    description:
      'The service whose Ed25519 service tokens may raise security alerts (their `iss`; `aud` must be demo-community-api)',
  },
  {
    name: 'SECURITY_ALERTS_VERIFY_KEY',
    kind: 'string',
    optional: true,
    description:
      "SECURITY_ALERTS_ISSUER's Ed25519 public key (SPKI PEM). Required in production; unset elsewhere: alerts need no token",
  },
  {
    name: 'DEMO_WRITE_RATE_LIMIT',
    kind: 'int',
    default: 120,
    min: 1,
    max: 1_000_000,
    description:
      'Writes per acting user (or per client IP when anonymous) in each DEMO_WRITE_RATE_WINDOW_MS; more are answered 429',
  },
  {
    name: 'DEMO_WRITE_RATE_WINDOW_MS',
    kind: 'duration-ms',
    default: 60_000,
    min: 1000,
    max: 86_400_000,
    description: 'The window of DEMO_WRITE_RATE_LIMIT',
  },
  {
    name: 'IDEMPOTENCY_KEY_TTL_MS',
    kind: 'duration-ms',
    // A day: longer than any client's retry schedule (a mobile app retrying when it is back online
    // the next morning is past it and writes again), short enough that the table stays small.
    default: 86_400_000,
    min: 60_000,
    max: 7 * 86_400_000,
    description:
      'How long an Idempotency-Key answers its retries with the first answer (docs/CONTRACT.md "Producer-side dedup"); later the key is free again',
  },
  {
    name: 'REQUEST_FINGERPRINT_TTL_MS',
    kind: 'duration-ms',
    // 10 s: a double-click comes within one, a client library's blind retry after a lost answer
    // within a few; a person repeating the same post or comment on purpose takes longer (and the
    // window also ends at the actor's next other write). 0 turns fingerprints off.
    default: 10_000,
    min: 0,
    max: 3_600_000,
    description:
      'How long an identical request without an Idempotency-Key (same actor, route, params and body) is answered with the first answer instead of writing again; 0: off',
  },
  {
    name: 'REQUEST_KEYS_PURGE_INTERVAL_MS',
    kind: 'duration-ms',
    default: 600_000,
    min: 1000,
    max: 86_400_000,
    description: 'How often expired request keys are purged (one replica at a time, libs/db scheduler)',
  },
  {
    name: 'REQUEST_KEYS_PURGE_BATCH_SIZE',
    kind: 'int',
    default: 1000,
    min: 1,
    max: 50_000,
    description: 'Expired request keys deleted per statement by the purge (each batch its own short transaction)',
  },
  {
    name: 'OUTBOX_POLL_INTERVAL_MS',
    kind: 'duration-ms',
    default: 1000,
    min: 10,
    description: 'Relay polling fallback when no NOTIFY arrives',
  },
  {
    name: 'OUTBOX_BATCH_SIZE',
    kind: 'int',
    default: 200,
    min: 1,
    max: 5000,
    description: 'Outbox rows per relay cycle',
  },
] as const satisfies ConfigSpec;

export type DemoConfig = ConfigOf<typeof DEMO_CONFIG> & {
  /**
   * NODE_ENV=production: x-user-id is refused (writes need a user token), security alerts need a
   * service token, and the traffic generator may not run.
   */
  readonly production: boolean;
};

export function loadDemoConfig(env: Record<string, string | undefined> = process.env): DemoConfig {
  // Every problem at once, the shared variables' and this app's rules alike (one fix-up round).
  const issues: ConfigIssue[] = [];
  let config: ConfigOf<typeof DEMO_CONFIG> | undefined;
  try {
    config = loadConfig(DEMO_CONFIG, env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    issues.push(...err.issues);
  }
  const production = env['NODE_ENV'] === 'production';
  const flagged = new Set(issues.map((i) => i.name));
  const issuer = config?.SECURITY_ALERTS_ISSUER ?? (env['SECURITY_ALERTS_ISSUER']?.trim() || 'community-platform');
  const key = env['SECURITY_ALERTS_VERIFY_KEY']?.trim();
  if (key) {
    const issue = ed25519KeyIssue('SECURITY_ALERTS_VERIFY_KEY', 'public', key);
    if (issue) issues.push(issue);
  } else if (production) {
    issues.push({
      name: 'SECURITY_ALERTS_VERIFY_KEY',
      message: `SECURITY_ALERTS_VERIFY_KEY: is required when NODE_ENV=production (expected the Ed25519 public key, SPKI PEM, of ${issuer}, which signs the service tokens that raise security alerts)`,
    });
  }
  const rate = config?.DEMO_TRAFFIC_RATE ?? Number(env['DEMO_TRAFFIC_RATE'] || 0);
  if (production && !flagged.has('DEMO_TRAFFIC_RATE') && rate !== 0) {
    issues.push({
      name: 'DEMO_TRAFFIC_RATE',
      message: `DEMO_TRAFFIC_RATE: must be 0 when NODE_ENV=production (expected 0: the generator creates fake users and acts through x-user-id, which production refuses), got ${env['DEMO_TRAFFIC_RATE']}`,
    });
  }
  // A fingerprint is the weaker promise (no key, a guess that it is a retry): never held longer than a key.
  if (config && config.REQUEST_FINGERPRINT_TTL_MS > config.IDEMPOTENCY_KEY_TTL_MS) {
    issues.push({
      name: 'REQUEST_FINGERPRINT_TTL_MS',
      message: `REQUEST_FINGERPRINT_TTL_MS: must not exceed IDEMPOTENCY_KEY_TTL_MS (${config.IDEMPOTENCY_KEY_TTL_MS} ms: a keyless request is never held longer than a keyed one), got ${config.REQUEST_FINGERPRINT_TTL_MS}`,
    });
  }
  if (issues.length > 0 || config === undefined) throw new ConfigError(issues);
  return Object.freeze({ ...config, production });
}
