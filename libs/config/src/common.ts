// The variables every service shares, with the local defaults from docs/CONTRACT.md ("Configuration").
// A service loads `[...commonConfig(name), ...its own entries]`.
//
// This file is the one place the local defaults and ports are written. Besides the services, the
// test helpers (libs/testing), prisma.config.ts and the plain-node dev scripts read them from here;
// the scripts compile this file on the fly (scripts/dev/setup/project-rules.mjs), so keep it free
// of runtime imports.
import type { ConfigSpec } from './spec';

export const SERVICE_NAMES = [
  'notification-service',
  'email-service',
  'feed-service',
  'reconciler',
  'demo-community-api',
  'push-service',
] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Where the backing services answer on a development machine (docs/CONTRACT.md "Configuration"). */
export const LOCAL_DEFAULTS = {
  AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
  DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/community',
  REDIS_URL: 'redis://127.0.0.1:6379',
  SMTP_URL: 'smtp://127.0.0.1:1025',
} as const;

/** Contract ports (docs/CONTRACT.md "HTTP contract"). */
export const DEFAULT_PORTS: Readonly<Record<ServiceName, number>> = {
  'notification-service': 3001,
  'email-service': 3002,
  'feed-service': 3003,
  reconciler: 3004,
  'demo-community-api': 3000,
  'push-service': 3005,
};

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Well known on purpose: it only exists so a laptop starts without setup, and production refuses it. */
export const DEV_JWT_SECRET = 'dev-only-jwt-secret-change-me-0123456789abcdef';

/**
 * email-service's unsubscribe-link key (UNSUBSCRIBE_TOKEN_SECRET), a secret of its own so signing
 * links needs no JWT_SECRET. Same rule: a laptop starts without setup, production refuses it.
 */
export const DEV_UNSUBSCRIBE_TOKEN_SECRET = 'dev-only-unsubscribe-secret-change-me-0123456789';

/**
 * The development operator's admin key (docs/DEPLOY.md "Admin keys"): the public half, in ADMIN_KEYS'
 * format. Its private half is DEV_ADMIN_SIGNING_KEY (keys.ts), which the ops CLI uses outside
 * production when no OPS_ADMIN_KEY_FILE is given. Well known on purpose; production refuses it.
 */
export const DEV_ADMIN_KEY_ID = 'dev-operator-1';
export const DEV_ADMIN_OPERATOR = 'dev-operator';
export const DEV_ADMIN_KEYS = JSON.stringify([
  {
    kid: DEV_ADMIN_KEY_ID,
    operator: DEV_ADMIN_OPERATOR,
    publicKey: 'MCowBQYDK2VwAyEAE4Fj3W0ClHRM0EDZrgm5R2B5jqJVsQIhSzLB+1lnWnk=',
  },
]);

/** What the community site writes in its user tokens' `iss` and `aud` by default (docs/CONTRACT.md "HTTP contract"). */
export const DEFAULT_USER_TOKEN_ISSUER = 'community-site';
export const DEFAULT_USER_TOKEN_AUDIENCE = 'community-notifications';

/** The variables of bearer-token authentication (libs/observability `authSettingsFrom`); email-service has no authenticated route. */
export const AUTH_VARIABLES = [
  'JWT_SECRET',
  'JWT_SECRET_PREVIOUS',
  'USER_TOKEN_ISSUER',
  'USER_TOKEN_AUDIENCE',
  'USER_TOKEN_MAX_LIFETIME_MS',
  'ADMIN_KEYS',
  'ADMIN_TOKEN_MAX_LIFETIME_MS',
] as const;

/** The services that connect to Redis: feed-service (its feeds) and the reconciler (feed checks and rebuilds). */
const REDIS_CLIENTS: readonly ServiceName[] = ['feed-service', 'reconciler'];

export function commonConfig(service: ServiceName) {
  return [
    // One broker address (a load balancer or a Kubernetes Service), or every node of the cluster
    // comma-separated: the connection tries them in turn (libs/messaging urls.ts).
    { name: 'AMQP_URL', kind: 'url', default: LOCAL_DEFAULTS.AMQP_URL, protocols: ['amqp:', 'amqps:'], list: true },
    // Who provisions the broker topology (libs/messaging `provisioning`): `declare-all` (development,
    // tests: the service declares everything and applies the policies) or `own-queues` (a
    // least-privilege broker user: the topology admin provisions, docs/DEPLOY.md).
    { name: 'AMQP_TOPOLOGY', kind: 'enum', values: ['declare-all', 'own-queues'], default: 'declare-all' },
    // A message without the AMQP user-id property (libs/messaging `producerCheck.missingUserId`,
    // docs/MESSAGING.md "Broker identity"): `refuse` (dead-lettered: nobody vouches for its
    // publisher) or `accept`, for a transition while a producer outside this repository does not set it.
    { name: 'AMQP_MISSING_USER_ID', kind: 'enum', values: ['refuse', 'accept'], default: 'refuse' },
    // The management API (queue policies; the reconciler's watchdog and DLQ console). Empty: port 15672
    // on AMQP_URL's host with its credentials (libs/messaging managementTargetFor).
    {
      name: 'RABBITMQ_MANAGEMENT_URL',
      kind: 'string',
      default: '',
      description:
        "management API base (http://user:pass@host:15672); empty: port 15672 on AMQP_URL's host with its credentials",
    },
    {
      name: 'DATABASE_URL',
      kind: 'url',
      default: LOCAL_DEFAULTS.DATABASE_URL,
      protocols: ['postgresql:', 'postgres:'],
    },
    // The services that use Redis log in as an ACL user of their own in production (docs/DEPLOY.md
    // "Redis"); the others never connect to it, so their REDIS_URL is not checked.
    {
      name: 'REDIS_URL',
      kind: 'url',
      default: LOCAL_DEFAULTS.REDIS_URL,
      protocols: ['redis:', 'rediss:'],
      passwordInProduction: REDIS_CLIENTS.includes(service),
    },
    { name: 'SMTP_URL', kind: 'url', default: LOCAL_DEFAULTS.SMTP_URL, protocols: ['smtp:', 'smtps:'] },
    // User tokens (HS256, issued by the community site): at least 32 bytes of key, and refused at its
    // development default in production. JWT_SECRET_PREVIOUS is still accepted while a rotation runs
    // (docs/DEPLOY.md "Rotating the user-token secret"); nothing is signed with it.
    {
      name: 'JWT_SECRET',
      kind: 'string',
      default: DEV_JWT_SECRET,
      minLength: 32,
      secret: true,
      refuseDefaultInProduction: true,
    },
    {
      name: 'JWT_SECRET_PREVIOUS',
      kind: 'string',
      optional: true,
      minLength: 32,
      secret: true,
      description: 'the user-token secret being rotated out; verified, never signed with',
    },
    {
      name: 'USER_TOKEN_ISSUER',
      kind: 'string',
      default: DEFAULT_USER_TOKEN_ISSUER,
      description: "a user token's required `iss`",
    },
    {
      name: 'USER_TOKEN_AUDIENCE',
      kind: 'string',
      default: DEFAULT_USER_TOKEN_AUDIENCE,
      description: "a user token's required `aud`",
    },
    {
      name: 'USER_TOKEN_MAX_LIFETIME_MS',
      kind: 'duration-ms',
      default: 3_600_000,
      min: 1000,
      max: 7 * 86_400_000,
      description: 'longest a user token may live: exp - iat, and exp - now',
    },
    // Admin tokens (EdDSA): the operators' public keys, one entry per `kid`. No service holds a key
    // that signs them (docs/DEPLOY.md "Admin keys").
    {
      name: 'ADMIN_KEYS',
      kind: 'string',
      default: DEV_ADMIN_KEYS,
      format: 'admin-keys',
      refuseDefaultInProduction: true,
      description: 'JSON array of {kid, operator, publicKey}: the Ed25519 public keys of the operators',
    },
    {
      name: 'ADMIN_TOKEN_MAX_LIFETIME_MS',
      kind: 'duration-ms',
      default: 3_600_000,
      min: 1000,
      max: 12 * 3_600_000,
      description: 'longest an admin token may live: exp - iat, and exp - now',
    },
    { name: 'LOG_LEVEL', kind: 'enum', values: LOG_LEVELS, default: 'info' },
    // This machine only unless asked: `npm start` on a laptop must not serve the LAN. The images set
    // 0.0.0.0 (a container's port is reached from outside it, through the pod or the published port).
    {
      name: 'HOST',
      kind: 'string',
      default: '127.0.0.1',
      description: 'interface the HTTP server binds (127.0.0.1: this machine only; the images set 0.0.0.0)',
    },
    // 0 is allowed so tests can ask the OS for a free port.
    { name: 'PORT', kind: 'int', default: DEFAULT_PORTS[service], min: 0, max: 65535 },
    // How long SIGTERM may take (stop consuming, finish in-flight work, close) before exiting 1.
    { name: 'SHUTDOWN_TIMEOUT_MS', kind: 'duration-ms', default: 10_000, min: 1 },
  ] as const satisfies ConfigSpec;
}

export type CommonConfigSpec = ReturnType<typeof commonConfig>;
