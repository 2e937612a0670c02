import { ConfigError } from '@community/config';
import { loadEmailConfig } from './config';

describe('configuration', () => {
  it('has working defaults and refuses a lease shorter than an SMTP exchange, naming the variable', () => {
    const config = loadEmailConfig({});
    expect(config).toMatchObject({ PORT: 3002, SMTP_RATE_PER_SECOND: 20, SMTP_POOL_SIZE: 5, DIGEST_PERIOD: 'daily', PUBLIC_BASE_URL: 'http://127.0.0.1:3000' });
    expect(() => loadEmailConfig({ EMAIL_LEASE_MS: '1000' })).toThrow(ConfigError);
    expect(() => loadEmailConfig({ EMAIL_LEASE_MS: '1000' })).toThrow(/EMAIL_LEASE_MS: 1000 must exceed/);
    expect(() => loadEmailConfig({ DIGEST_PERIOD: 'weekly' })).toThrow(/DIGEST_PERIOD/);
  });
});
