import { generateKeyPairSync } from 'node:crypto';
import { ConfigError } from '@community/config';
import { generateOperatorKey } from '@community/service';
import { loadDemoConfig } from './config';

function issuesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues.map((i) => i.name);
  }
  throw new Error('expected a ConfigError');
}

const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
// What production needs besides this app's own rules (the shared secrets refuse their defaults).
const production = {
  NODE_ENV: 'production',
  JWT_SECRET: 'p'.repeat(48),
  ADMIN_KEYS: JSON.stringify([generateOperatorKey('ops-alice', 'ops-alice-1').entry]),
  SECURITY_ALERTS_VERIFY_KEY: publicPem,
};

describe('loadDemoConfig', () => {
  it('leaves the traffic generator off and limits writes unless told otherwise', () => {
    const config = loadDemoConfig({});
    expect([
      config.DEMO_TRAFFIC_RATE,
      config.DEMO_WRITE_RATE_LIMIT,
      config.DEMO_WRITE_RATE_WINDOW_MS,
      config.production,
    ]).toEqual([0, 120, 60_000, false]);
    expect(loadDemoConfig({ DEMO_TRAFFIC_RATE: '2' }).DEMO_TRAFFIC_RATE).toBe(2);
  });

  it('starts in production with the security-alert issuer’s public key', () => {
    const config = loadDemoConfig(production);
    expect([config.production, config.SECURITY_ALERTS_ISSUER, config.SECURITY_ALERTS_VERIFY_KEY]).toEqual([
      true,
      'community-platform',
      publicPem.trim(),
    ]);
  });

  it('fails in production without SECURITY_ALERTS_VERIFY_KEY, naming it', () => {
    const without = { ...production, SECURITY_ALERTS_VERIFY_KEY: undefined };
    expect(issuesOf(() => loadDemoConfig(without))).toEqual(['SECURITY_ALERTS_VERIFY_KEY']);
    expect(() => loadDemoConfig(without)).toThrow(/SECURITY_ALERTS_VERIFY_KEY: is required when NODE_ENV=production/);
    // Outside production alerts need no token, so no key is fine.
    expect(loadDemoConfig({}).SECURITY_ALERTS_VERIFY_KEY).toBeUndefined();
  });

  it('refuses a private key or a non-key as SECURITY_ALERTS_VERIFY_KEY, anywhere', () => {
    const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(issuesOf(() => loadDemoConfig({ SECURITY_ALERTS_VERIFY_KEY: privatePem }))).toEqual([
      'SECURITY_ALERTS_VERIFY_KEY',
    ]);
    expect(issuesOf(() => loadDemoConfig({ SECURITY_ALERTS_VERIFY_KEY: 'not a key' }))).toEqual([
      'SECURITY_ALERTS_VERIFY_KEY',
    ]);
  });

  it('reports its own rules with the shared variables’ problems, in one error', () => {
    const weak = { ...production, JWT_SECRET: undefined, SECURITY_ALERTS_VERIFY_KEY: '', DEMO_TRAFFIC_RATE: '2' };
    expect(issuesOf(() => loadDemoConfig(weak)).sort()).toEqual([
      'DEMO_TRAFFIC_RATE',
      'JWT_SECRET',
      'SECURITY_ALERTS_VERIFY_KEY',
    ]);
  });

  it('holds an Idempotency-Key 24 h and a keyless fingerprint 10 s unless told otherwise; 0 turns fingerprints off', () => {
    const config = loadDemoConfig({});
    expect([config.IDEMPOTENCY_KEY_TTL_MS, config.REQUEST_FINGERPRINT_TTL_MS]).toEqual([86_400_000, 10_000]);
    expect(loadDemoConfig({ REQUEST_FINGERPRINT_TTL_MS: '0' }).REQUEST_FINGERPRINT_TTL_MS).toBe(0);
    expect(loadDemoConfig({ IDEMPOTENCY_KEY_TTL_MS: '1h' }).IDEMPOTENCY_KEY_TTL_MS).toBe(3_600_000);
  });

  it('fails naming the variable for a malformed TTL, or a fingerprint held longer than a key', () => {
    expect(issuesOf(() => loadDemoConfig({ IDEMPOTENCY_KEY_TTL_MS: 'soon' }))).toEqual(['IDEMPOTENCY_KEY_TTL_MS']);
    expect(issuesOf(() => loadDemoConfig({ REQUEST_FINGERPRINT_TTL_MS: '-1' }))).toEqual([
      'REQUEST_FINGERPRINT_TTL_MS',
    ]);
    const longer = { IDEMPOTENCY_KEY_TTL_MS: '1m', REQUEST_FINGERPRINT_TTL_MS: '2m' };
    expect(issuesOf(() => loadDemoConfig(longer))).toEqual(['REQUEST_FINGERPRINT_TTL_MS']);
    expect(() => loadDemoConfig(longer)).toThrow(/REQUEST_FINGERPRINT_TTL_MS: must not exceed IDEMPOTENCY_KEY_TTL_MS/);
  });

  it('refuses the traffic generator in production', () => {
    expect(issuesOf(() => loadDemoConfig({ ...production, DEMO_TRAFFIC_RATE: '2' }))).toEqual(['DEMO_TRAFFIC_RATE']);
  });
});
