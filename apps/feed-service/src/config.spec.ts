import { ConfigError } from '@community/config';
import { loadFeedConfig } from './config';

const base = {
  DATABASE_URL: 'postgres://u@localhost/db',
  AMQP_URL: 'amqp://localhost',
  REDIS_URL: 'redis://localhost:6379',
  JWT_SECRET: 'x'.repeat(32),
};

describe('loadFeedConfig', () => {
  it('leaves DATABASE_POOL_MIN unset by default (the service keeps its whole pool open)', () => {
    const config = loadFeedConfig(base);
    expect(config.DATABASE_POOL_MAX).toBe(10);
    expect(config.DATABASE_POOL_MIN).toBeUndefined();
    expect(loadFeedConfig({ ...base, DATABASE_POOL_MIN: '0' }).DATABASE_POOL_MIN).toBe(0);
  });

  it('refuses a DATABASE_POOL_MIN above DATABASE_POOL_MAX, naming the variable', () => {
    expect(() => loadFeedConfig({ ...base, DATABASE_POOL_MAX: '4', DATABASE_POOL_MIN: '5' })).toThrow(ConfigError);
    expect(() => loadFeedConfig({ ...base, DATABASE_POOL_MAX: '4', DATABASE_POOL_MIN: '5' })).toThrow(
      /DATABASE_POOL_MIN: 5 exceeds DATABASE_POOL_MAX \(4\)/,
    );
  });
});
