import { createECDH } from 'node:crypto';
import {
  commonConfig,
  ConfigError,
  DEV_PUSH_SERVICE_SIGNING_KEY,
  ed25519KeyIssue,
  loadConfig,
  type ConfigIssue,
  type ConfigOf,
} from '@community/config';

/** Names this service everywhere: logs, metrics, the AMQP connection, the pg application_name. */
export const SERVICE_NAME = 'push-service';

/**
 * The development VAPID key pair (P-256, base64url): `npm start` and the tests run with it, and it is
 * refused when NODE_ENV=production. A deployment makes its own (`npx web-push generate-vapid-keys`)
 * and keeps it: a browser's subscription is bound to the public key it subscribed with, so a new
 * key pair orphans every subscription (docs/PUSH.md "Configuration").
 */
export const DEV_VAPID_PUBLIC_KEY =
  'BMaapS4Is6YRtQt0VFHwaBOGWbx2UjId7dr-jm3Fd2tazZ8abgmI_pjO0xN2KxqtmAwUBeHY3iwSjQSEwMiHQUc';
export const DEV_VAPID_PRIVATE_KEY = 'Zyes2-YRIwniL97mnEYu_vBYCR0J8WGfbauf0-pv-ZA';

/** The shared variables plus push-service's own (docs/PUSH.md "Configuration"). */
export const PUSH_CONFIG_SPEC = [
  ...commonConfig(SERVICE_NAME),
  {
    name: 'VAPID_PUBLIC_KEY',
    kind: 'string',
    default: DEV_VAPID_PUBLIC_KEY,
    refuseDefaultInProduction: true,
    description: "the VAPID public key (P-256, uncompressed, base64url): the browsers' applicationServerKey",
  },
  {
    name: 'VAPID_PRIVATE_KEY',
    kind: 'string',
    default: DEV_VAPID_PRIVATE_KEY,
    secret: true,
    refuseDefaultInProduction: true,
    description: 'the VAPID private key (32 bytes, base64url) that signs every push request (RFC 8292)',
  },
  {
    name: 'VAPID_SUBJECT',
    kind: 'string',
    default: 'mailto:push@community.local',
    refuseDefaultInProduction: true,
    description: "the operator's contact in every VAPID token: a mailto: or https: URL",
  },
  // Links in pushes point to the community site, as email's do.
  {
    name: 'PUBLIC_BASE_URL',
    kind: 'url',
    default: 'http://127.0.0.1:3000',
    protocols: ['http:', 'https:'],
    refuseDefaultInProduction: true,
    description: 'the community site as users reach it (the link a notification opens)',
  },
  {
    name: 'PUSH_ALLOW_INSECURE_LOCALHOST',
    kind: 'bool',
    default: false,
    description:
      'accept http:// subscription endpoints on localhost, 127.0.0.1 and ::1 (tests and development push services); refused in production',
  },
  {
    name: 'PUSH_MAX_SUBSCRIPTIONS_PER_USER',
    kind: 'int',
    default: 10,
    min: 1,
    max: 1000,
    description: 'browsers a user may subscribe; one more is refused with 409 until one is removed',
  },
  {
    name: 'PUSH_REQUEST_TIMEOUT_MS',
    kind: 'duration-ms',
    default: 10_000,
    min: 100,
    max: 120_000,
    description: 'one request to a push service: past it the attempt counts as failed (transient) and is retried',
  },
  {
    name: 'PUSH_LEASE_MS',
    kind: 'duration-ms',
    default: 60_000,
    min: 200,
    max: 3_600_000,
    description:
      'a claimed (sending) ledger row older than this is presumed abandoned (a crash) and sent again; must exceed PUSH_REQUEST_TIMEOUT_MS',
  },
  {
    name: 'PUSH_POLL_INTERVAL_MS',
    kind: 'duration-ms',
    default: 1_000,
    min: 10,
    max: 600_000,
    description: 'how often each replica looks for ledger rows whose retry is due (429, 5xx, a crashed sender)',
  },
  {
    name: 'PUSH_BATCH_SIZE',
    kind: 'int',
    default: 50,
    min: 1,
    max: 10_000,
    description: 'due rows one poll claims',
  },
  {
    name: 'PUSH_MAX_ATTEMPTS',
    kind: 'int',
    default: 8,
    min: 1,
    max: 100,
    description: 'attempts of one push (429, 5xx, no answer) before its row is failed',
  },
  {
    name: 'PUSH_CONSUMER_CONCURRENCY',
    kind: 'int',
    default: 16,
    min: 1,
    max: 1000,
    description: 'messages of push-service.send handled at once',
  },
  {
    name: 'PUSH_RETENTION_DAYS',
    kind: 'int',
    default: 30,
    min: 2,
    max: 3650,
    description:
      'finished ledger rows older than this are purged; notification.created older than this less a day is refused (its row may be gone)',
  },
  // Delivery timing (docs/PUSH.md "Quiet hours and delay-then-check").
  {
    name: 'PUSH_READ_CHECK_DELAY_MS',
    kind: 'duration-ms',
    default: 0,
    min: 0,
    max: 3_600_000,
    description:
      'hold a push (not a security alert) this long after it arrived, then skip it if it was read in the app meanwhile (0: off, pushed at once)',
  },
  {
    name: 'PUSH_READ_CHECK_TIMEOUT_MS',
    kind: 'duration-ms',
    default: 2_000,
    min: 100,
    max: 30_000,
    description: "the read-state call's budget; a check that fails or times out pushes anyway",
  },
  {
    name: 'PUSH_SERVICE_SIGNING_KEY',
    kind: 'string',
    default: DEV_PUSH_SERVICE_SIGNING_KEY,
    secret: true,
    refuseDefaultInProduction: true,
    description:
      "Ed25519 private key (PKCS8 PEM) of push-service's service tokens (the read-state checks); notification-service verifies them with PUSH_SERVICE_VERIFY_KEY",
  },
  {
    name: 'NOTIFICATION_SERVICE_URL',
    kind: 'url',
    default: 'http://127.0.0.1:3001',
    protocols: ['http:', 'https:'],
    description: 'notification-service, asked whether a held push was read in the app (POST /v1/internal/read-state)',
  },
] as const;

export type PushConfig = ConfigOf<typeof PUSH_CONFIG_SPEC>;

const b64url = /^[A-Za-z0-9_-]+$/;

/** The bytes of a base64url value, or undefined when it is not base64url. */
export function base64urlBytes(value: string): Buffer | undefined {
  if (!b64url.test(value)) return undefined;
  return Buffer.from(value, 'base64url');
}

export function loadPushConfig(env: Record<string, string | undefined> = process.env): PushConfig {
  const config = loadConfig(PUSH_CONFIG_SPEC, env);
  const issues: ConfigIssue[] = [];
  const pub = base64urlBytes(config.VAPID_PUBLIC_KEY);
  if (!pub || pub.length !== 65 || pub[0] !== 0x04) {
    issues.push({
      name: 'VAPID_PUBLIC_KEY',
      message:
        'VAPID_PUBLIC_KEY: expected an uncompressed P-256 public key, 65 bytes base64url (npx web-push generate-vapid-keys)',
    });
  }
  const priv = base64urlBytes(config.VAPID_PRIVATE_KEY);
  if (!priv || priv.length !== 32) {
    issues.push({
      name: 'VAPID_PRIVATE_KEY',
      message: 'VAPID_PRIVATE_KEY: expected a P-256 private key, 32 bytes base64url (npx web-push generate-vapid-keys)',
    });
  } else if (pub?.length === 65 && !publicKeyOf(priv)?.equals(pub)) {
    issues.push({
      name: 'VAPID_PRIVATE_KEY',
      message:
        'VAPID_PRIVATE_KEY: is not the private half of VAPID_PUBLIC_KEY (push services would refuse every token)',
    });
  }
  if (!validSubject(config.VAPID_SUBJECT)) {
    issues.push({
      name: 'VAPID_SUBJECT',
      message: 'VAPID_SUBJECT: expected a mailto: or https: URL, the contact push services reach the operator at',
    });
  }
  if (config.PUSH_LEASE_MS <= config.PUSH_REQUEST_TIMEOUT_MS) {
    issues.push({
      name: 'PUSH_LEASE_MS',
      message: `PUSH_LEASE_MS: ${config.PUSH_LEASE_MS} must exceed PUSH_REQUEST_TIMEOUT_MS (${config.PUSH_REQUEST_TIMEOUT_MS}): a slow but alive send must not be taken over`,
    });
  }
  if (env['NODE_ENV'] === 'production' && config.PUSH_ALLOW_INSECURE_LOCALHOST) {
    issues.push({
      name: 'PUSH_ALLOW_INSECURE_LOCALHOST',
      message: 'PUSH_ALLOW_INSECURE_LOCALHOST: not allowed when NODE_ENV=production (every real push service is https)',
    });
  }
  const keyIssue = ed25519KeyIssue('PUSH_SERVICE_SIGNING_KEY', 'private', config.PUSH_SERVICE_SIGNING_KEY);
  if (keyIssue) issues.push(keyIssue);
  if (issues.length > 0) throw new ConfigError(issues);
  return config;
}

function publicKeyOf(privateKey: Buffer): Buffer | undefined {
  try {
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(privateKey);
    return ecdh.getPublicKey();
  } catch {
    return undefined;
  }
}

function validSubject(subject: string): boolean {
  if (/^mailto:[^@\s]+@[^@\s]+$/.test(subject)) return true;
  try {
    return new URL(subject).protocol === 'https:';
  } catch {
    return false;
  }
}
