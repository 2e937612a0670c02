import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { commonConfig, DEFAULT_PORTS, DEV_ADMIN_KEYS, DEV_JWT_SECRET, SERVICE_NAMES } from './common';
import { DEV_ADMIN_SIGNING_KEY, parseAdminKeys } from './keys';
import { ConfigError, loadConfig } from './load-config';

const DEV_ENTRY = (JSON.parse(DEV_ADMIN_KEYS) as Array<Record<string, string>>)[0];
const DEV_PUBLIC_KEY = createPublicKey(DEV_ADMIN_SIGNING_KEY);
const PRIVATE_PEM = DEV_ADMIN_SIGNING_KEY;
const RSA_PUBLIC = generateKeyPairSync('rsa', { modulusLength: 1024 })
  .publicKey.export({ type: 'spki', format: 'der' })
  .toString('base64');

describe('commonConfig', () => {
  it('has the docs/CONTRACT.md defaults', () => {
    const cfg = loadConfig(commonConfig('feed-service'), {});
    expect(cfg).toEqual({
      AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
      AMQP_TOPOLOGY: 'declare-all',
      AMQP_MISSING_USER_ID: 'refuse',
      RABBITMQ_MANAGEMENT_URL: '',
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/community',
      REDIS_URL: 'redis://127.0.0.1:6379',
      SMTP_URL: 'smtp://127.0.0.1:1025',
      JWT_SECRET: DEV_JWT_SECRET,
      JWT_SECRET_PREVIOUS: undefined,
      USER_TOKEN_ISSUER: 'community-site',
      USER_TOKEN_AUDIENCE: 'community-notifications',
      USER_TOKEN_MAX_LIFETIME_MS: 3_600_000,
      ADMIN_KEYS: DEV_ADMIN_KEYS,
      ADMIN_TOKEN_MAX_LIFETIME_MS: 3_600_000,
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: 3003,
      SHUTDOWN_TIMEOUT_MS: 10_000,
    });
  });

  it.each([
    ['notification-service', 3001],
    ['email-service', 3002],
    ['feed-service', 3003],
    ['reconciler', 3004],
    ['push-service', 3005],
    ['demo-community-api', 3000],
  ] as const)('%s listens on %i by default', (service, port) => {
    expect(loadConfig(commonConfig(service), {}).PORT).toBe(port);
    expect(DEFAULT_PORTS[service]).toBe(port);
  });

  it('covers every service name', () => {
    expect(Object.keys(DEFAULT_PORTS).sort()).toEqual([...SERVICE_NAMES].sort());
  });

  it('refuses the development JWT secret in production and names JWT_SECRET', () => {
    expect(() => loadConfig(commonConfig('reconciler'), { NODE_ENV: 'production' })).toThrow(
      /JWT_SECRET: the development default is refused when NODE_ENV=production/,
    );
    const cfg = loadConfig(commonConfig('reconciler'), {
      NODE_ENV: 'production',
      JWT_SECRET: 's'.repeat(40),
      ADMIN_KEYS: DEV_ADMIN_KEYS.replace('dev-operator-1', 'prod-1'),
      REDIS_URL: 'redis://reconciler:pw@redis:6379',
    });
    expect(cfg.JWT_SECRET).toBe('s'.repeat(40));
  });

  it('refuses a REDIS_URL without a password in production for the services that use Redis, and names it', () => {
    const production = {
      NODE_ENV: 'production',
      JWT_SECRET: 's'.repeat(40),
      ADMIN_KEYS: DEV_ADMIN_KEYS.replace('dev-operator-1', 'prod-1'),
    };
    for (const service of ['feed-service', 'reconciler'] as const) {
      for (const REDIS_URL of [undefined, 'redis://redis:6379', 'redis://feed-service@redis:6379']) {
        expect(() => loadConfig(commonConfig(service), { ...production, ...(REDIS_URL ? { REDIS_URL } : {}) })).toThrow(
          /REDIS_URL: a URL without a password is refused when NODE_ENV=production \(expected REDIS_URL as scheme:\/\/user:password@host\)/,
        );
      }
      expect(
        loadConfig(commonConfig(service), { ...production, REDIS_URL: 'rediss://feed-service:s3cret@redis:6380' })
          .REDIS_URL,
      ).toBe('rediss://feed-service:s3cret@redis:6380');
      // Outside production the local password-less Redis is fine.
      expect(loadConfig(commonConfig(service), {}).REDIS_URL).toBe('redis://127.0.0.1:6379');
    }
    // notification-service never connects to Redis: its REDIS_URL is not checked.
    expect(loadConfig(commonConfig('notification-service'), production).REDIS_URL).toBe('redis://127.0.0.1:6379');
  });

  it('takes AMQP_URL as one broker or a comma-separated list of nodes, each checked, credentials never echoed', () => {
    const list = 'amqp://u:secret@rabbit-0:5672/community, amqp://u:secret@rabbit-1:5672/community';
    expect(loadConfig(commonConfig('notification-service'), { AMQP_URL: list }).AMQP_URL).toBe(list);
    try {
      loadConfig(commonConfig('notification-service'), {
        AMQP_URL: 'amqp://u:secret@rabbit-0:5672/community,http://u:secret@rabbit-1',
      });
      throw new Error('expected a ConfigError');
    } catch (err) {
      const messages = (err as ConfigError).issues.map((i) => i.message);
      expect(messages).toEqual([
        'AMQP_URL: "http://u:***@rabbit-1" (in the list) has protocol http: (expected amqp:// or amqps://)',
      ]);
    }
    // A single-URL variable stays one URL: a comma makes it invalid.
    expect(() => loadConfig(commonConfig('notification-service'), { SMTP_URL: 'smtp://a:25,smtp://b:25' })).toThrow(
      /SMTP_URL/,
    );
  });

  it('rejects an unknown log level and a URL with the wrong scheme', () => {
    try {
      loadConfig(commonConfig('email-service'), { LOG_LEVEL: 'verbose', SMTP_URL: 'http://mail' });
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).issues.map((i) => i.message)).toEqual([
        'SMTP_URL: "http://mail" has protocol http: (expected smtp:// or smtps://)',
        'LOG_LEVEL: "verbose" is not allowed (expected one of: fatal, error, warn, info, debug, trace, silent)',
      ]);
    }
  });

  it('composes with service-specific entries and keeps the types', () => {
    const cfg = loadConfig(
      [...commonConfig('email-service'), { name: 'SMTP_RATE_PER_SECOND', kind: 'int', default: 10, min: 1 }],
      { SMTP_RATE_PER_SECOND: '25' },
    );
    const rate: number = cfg.SMTP_RATE_PER_SECOND;
    const level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent' = cfg.LOG_LEVEL;
    expect([rate, level, cfg.PORT]).toEqual([25, 'info', 3002]);
  });
});

describe('the token variables', () => {
  const issues = (env: Record<string, string>) => {
    try {
      loadConfig(commonConfig('reconciler'), env);
      return [];
    } catch (err) {
      return (err as ConfigError).issues.map((i) => i.message);
    }
  };

  it('refuses a JWT_SECRET or JWT_SECRET_PREVIOUS under 32 characters at start, naming the variable and not echoing it', () => {
    expect(issues({ JWT_SECRET: 'short-secret' })).toEqual([
      'JWT_SECRET: the value is too short (expected at least 32 characters)',
    ]);
    expect(issues({ JWT_SECRET_PREVIOUS: 'x'.repeat(31) })).toEqual([
      'JWT_SECRET_PREVIOUS: the value is too short (expected at least 32 characters)',
    ]);
    expect(issues({ JWT_SECRET: 'x'.repeat(32) })).toEqual([]);
  });

  it('has development defaults for the user tokens and the dev operator key, and refuses that key in production', () => {
    const cfg = loadConfig(commonConfig('feed-service'), {});
    expect([
      cfg.USER_TOKEN_ISSUER,
      cfg.USER_TOKEN_AUDIENCE,
      cfg.USER_TOKEN_MAX_LIFETIME_MS,
      cfg.ADMIN_TOKEN_MAX_LIFETIME_MS,
    ]).toEqual(['community-site', 'community-notifications', 3_600_000, 3_600_000]);
    expect(cfg.ADMIN_KEYS).toBe(DEV_ADMIN_KEYS);
    expect(
      issues({ NODE_ENV: 'production', JWT_SECRET: 's'.repeat(40), REDIS_URL: 'redis://reconciler:pw@redis:6379' }),
    ).toEqual([
      'ADMIN_KEYS: the development default is refused when NODE_ENV=production (expected ADMIN_KEYS to be set explicitly)',
    ]);
    expect(issues({ USER_TOKEN_MAX_LIFETIME_MS: '30d' })).toEqual([
      expect.stringMatching(/^USER_TOKEN_MAX_LIFETIME_MS: "30d" is not a duration/),
    ]);
  });

  it.each([
    ['not JSON', '{', /^ADMIN_KEYS: is not JSON/],
    ['an empty list', '[]', /^ADMIN_KEYS: is not a non-empty array/],
    [
      'a bad kid',
      JSON.stringify([{ kid: 'a b', operator: 'alice', publicKey: 'x' }]),
      /^ADMIN_KEYS: entry 0: kid must be/,
    ],
    [
      'a kid twice',
      JSON.stringify([{ ...DEV_ENTRY }, { ...DEV_ENTRY }]),
      /^ADMIN_KEYS: entry 1: kid 'dev-operator-1' is listed twice/,
    ],
    [
      'no operator',
      JSON.stringify([{ ...DEV_ENTRY, operator: '' }]),
      /^ADMIN_KEYS: entry 0 \(kid 'dev-operator-1'\): operator must be/,
    ],
    [
      'a key that is no key',
      JSON.stringify([{ ...DEV_ENTRY, publicKey: 'bm90IGEga2V5' }]),
      /^ADMIN_KEYS: entry 0 \(kid 'dev-operator-1'\): publicKey is not a base64 SPKI DER public key/,
    ],
    [
      'a private key',
      JSON.stringify([{ ...DEV_ENTRY, publicKey: PRIVATE_PEM }]),
      /publicKey is a private key; give the public key only/,
    ],
    [
      'an RSA key',
      JSON.stringify([{ ...DEV_ENTRY, publicKey: RSA_PUBLIC }]),
      /publicKey expected an Ed25519 public key, got rsa/,
    ],
    [
      'an unknown field',
      JSON.stringify([{ ...DEV_ENTRY, scope: 'all' }]),
      /^ADMIN_KEYS: entry 0 has unknown field\(s\) scope/,
    ],
  ])('refuses ADMIN_KEYS with %s, naming the variable', (_what, value, message) => {
    expect(issues({ ADMIN_KEYS: value })).toEqual([expect.stringMatching(message)]);
  });

  it('takes ADMIN_KEYS entries with PEM keys (real or escaped line breaks) beside base64 DER ones', () => {
    const pem = DEV_PUBLIC_KEY.export({ type: 'spki', format: 'pem' }).toString();
    const value = JSON.stringify([
      DEV_ENTRY,
      { kid: 'pem-1', operator: 'dev-operator', publicKey: pem },
      { kid: 'pem-2', operator: 'bob', publicKey: pem.replace(/\n/g, '\\n') },
    ]);
    expect(issues({ ADMIN_KEYS: value })).toEqual([]);
    expect(parseAdminKeys(value).map((k) => [k.kid, k.operator])).toEqual([
      ['dev-operator-1', 'dev-operator'],
      ['pem-1', 'dev-operator'],
      ['pem-2', 'bob'],
    ]);
  });
});
