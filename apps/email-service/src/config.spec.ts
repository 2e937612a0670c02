import { generateKeyPairSync } from 'node:crypto';
import { ConfigError, DEV_EMAIL_SERVICE_SIGNING_KEY } from '@community/config';
import { EMAIL_CONFIG_SPEC, legacyTokensUntil, loadEmailConfig } from './config';

/** Where production emails link to: explicit, https (the defaults are refused there). */
const PRODUCTION_LINKS = {
  PUBLIC_BASE_URL: 'https://community.example.com',
  UNSUBSCRIBE_BASE_URL: 'https://notifications.example.com',
};

describe('configuration', () => {
  it('email links: PUBLIC_BASE_URL and UNSUBSCRIBE_BASE_URL set explicitly in production, as https URLs, each error naming the variable', () => {
    // Every other variable whose default production refuses is given explicitly (its development
    // value will do here), so only the two link bases are missing.
    const others = EMAIL_CONFIG_SPEC.filter(
      (v) => 'refuseDefaultInProduction' in v && v.refuseDefaultInProduction && !(v.name in PRODUCTION_LINKS),
    );
    const production = {
      NODE_ENV: 'production',
      ...Object.fromEntries(others.map((v) => [v.name, String('default' in v ? v.default : '')])),
    };
    // Their development defaults (http://127.0.0.1) are refused, both named.
    for (const name of ['PUBLIC_BASE_URL', 'UNSUBSCRIBE_BASE_URL']) {
      expect(() => loadEmailConfig(production)).toThrow(
        new RegExp(`${name}: the development default is refused when NODE_ENV=production`),
      );
    }
    expect(() => loadEmailConfig({ ...production, PUBLIC_BASE_URL: PRODUCTION_LINKS.PUBLIC_BASE_URL })).toThrow(
      /UNSUBSCRIBE_BASE_URL: the development default is refused/,
    );
    // Set, but plain http: refused, naming the one that is.
    expect(() =>
      loadEmailConfig({ ...production, ...PRODUCTION_LINKS, UNSUBSCRIBE_BASE_URL: 'http://notifications.example.com' }),
    ).toThrow(/UNSUBSCRIBE_BASE_URL: must be an https URL when NODE_ENV=production/);
    expect(() =>
      loadEmailConfig({ ...production, ...PRODUCTION_LINKS, PUBLIC_BASE_URL: 'http://community.example.com' }),
    ).toThrow(/PUBLIC_BASE_URL: must be an https URL when NODE_ENV=production/);
    // Not absolute: not a URL at all.
    expect(() => loadEmailConfig({ ...production, ...PRODUCTION_LINKS, PUBLIC_BASE_URL: '/community' })).toThrow(
      /PUBLIC_BASE_URL: .* is not a valid URL/,
    );
    const config = loadEmailConfig({ ...production, ...PRODUCTION_LINKS });
    expect([config.PUBLIC_BASE_URL, config.UNSUBSCRIBE_BASE_URL]).toEqual([
      'https://community.example.com',
      'https://notifications.example.com',
    ]);
    // Development keeps its defaults and plain http.
    expect(loadEmailConfig({}).UNSUBSCRIBE_BASE_URL).toBe('http://127.0.0.1:3002');
  });

  it('has working defaults and refuses a lease shorter than an SMTP exchange, naming the variable', () => {
    const config = loadEmailConfig({});
    expect(config).toMatchObject({
      PORT: 3002,
      SMTP_RATE_PER_SECOND: 20,
      SMTP_POOL_SIZE: 5,
      DIGEST_PERIOD: 'daily',
      PUBLIC_BASE_URL: 'http://127.0.0.1:3000',
    });
    expect(() => loadEmailConfig({ EMAIL_LEASE_MS: '1000' })).toThrow(ConfigError);
    expect(() => loadEmailConfig({ EMAIL_LEASE_MS: '1000' })).toThrow(/EMAIL_LEASE_MS: 1000 must exceed/);
    expect(() => loadEmailConfig({ DIGEST_PERIOD: 'weekly' })).toThrow(/DIGEST_PERIOD/);
  });

  it('delivery timing: delay-then-check off and the daily digest at local midnight by default, bounds naming the variable', () => {
    expect(loadEmailConfig({})).toMatchObject({
      EMAIL_READ_CHECK_DELAY_MS: 0,
      EMAIL_READ_CHECK_TIMEOUT_MS: 2_000,
      DIGEST_LOCAL_HOUR: 0,
    });
    expect(loadEmailConfig({ EMAIL_READ_CHECK_DELAY_MS: '120000', DIGEST_LOCAL_HOUR: '8' })).toMatchObject({
      EMAIL_READ_CHECK_DELAY_MS: 120_000,
      DIGEST_LOCAL_HOUR: 8,
    });
    expect(() => loadEmailConfig({ DIGEST_LOCAL_HOUR: '24' })).toThrow(/DIGEST_LOCAL_HOUR/);
    expect(() => loadEmailConfig({ EMAIL_READ_CHECK_DELAY_MS: '7200000' })).toThrow(/EMAIL_READ_CHECK_DELAY_MS/);
    expect(() => loadEmailConfig({ EMAIL_READ_CHECK_TIMEOUT_MS: '10' })).toThrow(/EMAIL_READ_CHECK_TIMEOUT_MS/);
  });

  it('refuses a holder declared dead after fewer than three heartbeats, naming the variable', () => {
    expect(loadEmailConfig({})).toMatchObject({
      EMAIL_HEARTBEAT_INTERVAL_MS: 5_000,
      EMAIL_HOLDER_DEAD_AFTER_MS: 20_000,
    });
    expect(() => loadEmailConfig({ EMAIL_HEARTBEAT_INTERVAL_MS: '5000', EMAIL_HOLDER_DEAD_AFTER_MS: '10000' })).toThrow(
      /EMAIL_HOLDER_DEAD_AFTER_MS: 10000 must be at least 3 × EMAIL_HEARTBEAT_INTERVAL_MS = 15000/,
    );
  });

  it('unsubscribe links: a secret of their own, refused at its development default in production, never JWT_SECRET', () => {
    const config = loadEmailConfig({});
    expect(config.UNSUBSCRIBE_TOKEN_TTL_DAYS).toBe(60);
    expect(config.UNSUBSCRIBE_TOKEN_SECRET).not.toBe(config.JWT_SECRET);
    const production = {
      NODE_ENV: 'production',
      ...PRODUCTION_LINKS,
      JWT_SECRET: 'j'.repeat(40),
      EMAIL_SERVICE_SIGNING_KEY: ownKey(),
    };
    expect(() => loadEmailConfig(production)).toThrow(
      /UNSUBSCRIBE_TOKEN_SECRET: the development default is refused when NODE_ENV=production/,
    );
    expect(loadEmailConfig({ ...production, UNSUBSCRIBE_TOKEN_SECRET: 'u'.repeat(40) }).UNSUBSCRIBE_TOKEN_SECRET).toBe(
      'u'.repeat(40),
    );
    expect(() => loadEmailConfig({ JWT_SECRET: 's'.repeat(40), UNSUBSCRIBE_TOKEN_SECRET: 's'.repeat(40) })).toThrow(
      /UNSUBSCRIBE_TOKEN_SECRET: must differ from JWT_SECRET/,
    );
    expect(() => loadEmailConfig({ UNSUBSCRIBE_TOKEN_SECRET: 'short' })).toThrow(/UNSUBSCRIBE_TOKEN_SECRET/);
    expect(() => loadEmailConfig({ UNSUBSCRIBE_LEGACY_TOKENS_UNTIL: 'next spring' })).toThrow(
      /UNSUBSCRIBE_LEGACY_TOKENS_UNTIL: expected an ISO 8601 instant/,
    );
    expect(
      legacyTokensUntil(
        loadEmailConfig({ UNSUBSCRIBE_LEGACY_TOKENS_UNTIL: '2027-03-01T00:00:00Z', JWT_SECRET: 'j'.repeat(40) }),
      ),
    ).toEqual(new Date('2027-03-01T00:00:00Z'));
  });

  it('signs nothing with JWT_SECRET: starts in production without it; needs it only while version 1 links are honoured', () => {
    const production = {
      NODE_ENV: 'production',
      ...PRODUCTION_LINKS,
      UNSUBSCRIBE_TOKEN_SECRET: 'u'.repeat(40),
      EMAIL_SERVICE_SIGNING_KEY: ownKey(),
    };
    expect(loadEmailConfig(production).JWT_SECRET).toBeUndefined();
    expect(() => loadEmailConfig({ ...production, UNSUBSCRIBE_LEGACY_TOKENS_UNTIL: '2027-03-01T00:00:00Z' })).toThrow(
      /JWT_SECRET: required while UNSUBSCRIBE_LEGACY_TOKENS_UNTIL is set/,
    );
    expect(
      loadEmailConfig({
        ...production,
        UNSUBSCRIBE_LEGACY_TOKENS_UNTIL: '2027-03-01T00:00:00Z',
        JWT_SECRET: 'j'.repeat(40),
      }).JWT_SECRET,
    ).toBe('j'.repeat(40));
  });

  it('SMTP_FALLBACK_URL: optional, an smtp:// or smtps:// URL like SMTP_URL, another server than SMTP_URL, each error naming the variable', () => {
    expect(loadEmailConfig({}).SMTP_FALLBACK_URL).toBeUndefined();
    expect(loadEmailConfig({ SMTP_FALLBACK_URL: '' }).SMTP_FALLBACK_URL).toBeUndefined();
    expect(loadEmailConfig({ SMTP_FALLBACK_URL: 'smtps://u:p@smtp.backup.example:465' }).SMTP_FALLBACK_URL).toBe(
      'smtps://u:p@smtp.backup.example:465',
    );
    expect(() => loadEmailConfig({ SMTP_FALLBACK_URL: 'http://smtp.backup.example' })).toThrow(
      /SMTP_FALLBACK_URL: "http:\/\/smtp.backup.example" has protocol http: \(expected smtp:\/\/ or smtps:\/\/\)/,
    );
    expect(() => loadEmailConfig({ SMTP_FALLBACK_URL: 'not a url' })).toThrow(/SMTP_FALLBACK_URL: .*not a valid URL/);
    // The same server is no fallback: the default port spelled out, other credentials or letter case.
    const same = ['smtp://127.0.0.1:1025', 'smtp://someone:else@127.0.0.1:1025'];
    for (const url of same) {
      expect(() => loadEmailConfig({ SMTP_URL: 'smtp://127.0.0.1:1025', SMTP_FALLBACK_URL: url })).toThrow(
        /SMTP_FALLBACK_URL: must be another server than SMTP_URL \(both are smtp:\/\/127\.0\.0\.1:1025\)/,
      );
    }
    expect(() =>
      loadEmailConfig({ SMTP_URL: 'smtp://Mail.Example:25', SMTP_FALLBACK_URL: 'smtp://mail.example' }),
    ).toThrow(/SMTP_FALLBACK_URL: must be another server than SMTP_URL/);
    // Another port of the same host is another server.
    expect(
      loadEmailConfig({ SMTP_URL: 'smtp://127.0.0.1:1025', SMTP_FALLBACK_URL: 'smtp://127.0.0.1:1026' })
        .SMTP_FALLBACK_URL,
    ).toBe('smtp://127.0.0.1:1026');
  });

  it('EMAIL_SERVICE_SIGNING_KEY: an Ed25519 private key, its development default refused in production, each naming the variable', () => {
    expect(loadEmailConfig({}).EMAIL_SERVICE_SIGNING_KEY).toBe(DEV_EMAIL_SERVICE_SIGNING_KEY);
    const production = { NODE_ENV: 'production', ...PRODUCTION_LINKS, UNSUBSCRIBE_TOKEN_SECRET: 'u'.repeat(40) };
    expect(() => loadEmailConfig(production)).toThrow(
      /EMAIL_SERVICE_SIGNING_KEY: the development default is refused when NODE_ENV=production/,
    );
    expect(() => loadEmailConfig({ EMAIL_SERVICE_SIGNING_KEY: 'not a key' })).toThrow(
      /EMAIL_SERVICE_SIGNING_KEY: not a PEM PKCS#8 private key/,
    );
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    expect(() => loadEmailConfig({ EMAIL_SERVICE_SIGNING_KEY: rsa })).toThrow(
      /EMAIL_SERVICE_SIGNING_KEY: expected an Ed25519 private key, got rsa private key/,
    );
    // One-line env files: \n escapes are accepted.
    expect(() => loadEmailConfig({ EMAIL_SERVICE_SIGNING_KEY: ownKey().replace(/\n/g, '\\n') })).not.toThrow();
  });
});

function ownKey(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}
