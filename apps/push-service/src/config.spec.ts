import { generateKeyPairSync } from 'node:crypto';
import { generateVAPIDKeys } from 'web-push';
import { loadPushConfig } from './config';

const signingKey = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

it('loads with the development defaults', () => {
  const config = loadPushConfig({});
  expect(config.PORT).toBe(3005);
  expect(config.PUSH_MAX_SUBSCRIPTIONS_PER_USER).toBe(10);
  // Delay-then-check is off unless configured.
  expect(config.PUSH_READ_CHECK_DELAY_MS).toBe(0);
  expect(config.NOTIFICATION_SERVICE_URL).toBe('http://127.0.0.1:3001');
});

it('refuses the development signing key in production, and names a key that is not Ed25519 PKCS8', () => {
  expect(() => loadPushConfig({ NODE_ENV: 'production' })).toThrow(/PUSH_SERVICE_SIGNING_KEY/);
  expect(() => loadPushConfig({ PUSH_SERVICE_SIGNING_KEY: 'not a key' })).toThrow(/PUSH_SERVICE_SIGNING_KEY: /);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
  expect(() => loadPushConfig({ PUSH_SERVICE_SIGNING_KEY: rsa.toString() })).toThrow(/PUSH_SERVICE_SIGNING_KEY: /);
  expect(loadPushConfig({ PUSH_SERVICE_SIGNING_KEY: signingKey() }).PUSH_SERVICE_SIGNING_KEY).toMatch(/PRIVATE KEY/);
});

it('names a read-check delay or a notification-service URL it cannot use', () => {
  expect(() => loadPushConfig({ PUSH_READ_CHECK_DELAY_MS: '-1' })).toThrow(/PUSH_READ_CHECK_DELAY_MS/);
  expect(() => loadPushConfig({ PUSH_READ_CHECK_DELAY_MS: '2h' })).toThrow(/PUSH_READ_CHECK_DELAY_MS/);
  expect(() => loadPushConfig({ NOTIFICATION_SERVICE_URL: 'ftp://ns' })).toThrow(/NOTIFICATION_SERVICE_URL/);
  expect(loadPushConfig({ PUSH_READ_CHECK_DELAY_MS: '60000' }).PUSH_READ_CHECK_DELAY_MS).toBe(60_000);
});

it('refuses the development VAPID keys in production, naming the variables', () => {
  expect(() => loadPushConfig({ NODE_ENV: 'production' })).toThrow(/VAPID_PUBLIC_KEY/);
  expect(() => loadPushConfig({ NODE_ENV: 'production' })).toThrow(/VAPID_PRIVATE_KEY/);
});

it('names a malformed or mismatched key and a bad subject', () => {
  expect(() => loadPushConfig({ VAPID_PUBLIC_KEY: 'abc' })).toThrow(/VAPID_PUBLIC_KEY: expected an uncompressed P-256/);
  expect(() => loadPushConfig({ VAPID_PRIVATE_KEY: 'abc' })).toThrow(/VAPID_PRIVATE_KEY: expected a P-256 private key/);
  const other = generateVAPIDKeys();
  expect(() => loadPushConfig({ VAPID_PRIVATE_KEY: other.privateKey })).toThrow(
    /VAPID_PRIVATE_KEY: is not the private half of VAPID_PUBLIC_KEY/,
  );
  expect(() =>
    loadPushConfig({ VAPID_PUBLIC_KEY: other.publicKey, VAPID_PRIVATE_KEY: other.privateKey }),
  ).not.toThrow();
  expect(() => loadPushConfig({ VAPID_SUBJECT: 'ops team' })).toThrow(
    /VAPID_SUBJECT: expected a mailto: or https: URL/,
  );
});

it('refuses a lease no longer than a request, and insecure endpoints in production', () => {
  expect(() => loadPushConfig({ PUSH_LEASE_MS: '5000', PUSH_REQUEST_TIMEOUT_MS: '5000' })).toThrow(/PUSH_LEASE_MS/);
  const keys = generateVAPIDKeys();
  const production = {
    NODE_ENV: 'production',
    JWT_SECRET: 's'.repeat(40),
    ADMIN_KEYS: loadPushConfig({}).ADMIN_KEYS.replace('dev-operator-1', 'prod-1'),
    VAPID_PUBLIC_KEY: keys.publicKey,
    VAPID_PRIVATE_KEY: keys.privateKey,
    VAPID_SUBJECT: 'mailto:ops@community.example',
    PUBLIC_BASE_URL: 'https://community.example',
    PUSH_SERVICE_SIGNING_KEY: signingKey(),
  };
  expect(() => loadPushConfig(production)).not.toThrow();
  expect(() => loadPushConfig({ ...production, PUSH_ALLOW_INSECURE_LOCALHOST: 'true' })).toThrow(
    /PUSH_ALLOW_INSECURE_LOCALHOST: not allowed/,
  );
});
