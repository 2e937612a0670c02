import { commonConfig, DEFAULT_PORTS, DEV_JWT_SECRET, SERVICE_NAMES } from './common';
import { ConfigError, loadConfig } from './load-config';

describe('commonConfig', () => {
  it('has the docs/CONTRACT.md defaults', () => {
    const cfg = loadConfig(commonConfig('feed-service'), {});
    expect(cfg).toEqual({
      AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
      AMQP_TOPOLOGY: 'declare-all',
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/community',
      REDIS_URL: 'redis://127.0.0.1:6379',
      SMTP_URL: 'smtp://127.0.0.1:1025',
      JWT_SECRET: DEV_JWT_SECRET,
      LOG_LEVEL: 'info',
      PORT: 3003,
      SHUTDOWN_TIMEOUT_MS: 10_000,
    });
  });

  it.each([
    ['notification-service', 3001],
    ['email-service', 3002],
    ['feed-service', 3003],
    ['reconciler', 3004],
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
    const cfg = loadConfig(commonConfig('reconciler'), { NODE_ENV: 'production', JWT_SECRET: 's'.repeat(40) });
    expect(cfg.JWT_SECRET).toBe('s'.repeat(40));
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
