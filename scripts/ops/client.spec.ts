import { createHmac } from 'node:crypto';
import { clientConfig, signAdminToken, UsageError } from './client';

describe('signAdminToken', () => {
  it('is an HS256 JWT with the admin scope, verifiable with the secret', () => {
    const token = signAdminToken('s3cret', 'ops:alice', 60, 1000);
    const [h, p, s] = token.split('.');
    expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(JSON.parse(Buffer.from(p, 'base64url').toString())).toEqual({ sub: 'ops:alice', scope: 'admin', iat: 1000, exp: 1060 });
    expect(s).toBe(createHmac('sha256', 's3cret').update(`${h}.${p}`).digest('base64url'));
  });
});

describe('clientConfig', () => {
  it('takes OPS_TOKEN as is', () => {
    expect(clientConfig({ OPS_TOKEN: 't', RECONCILER_URL: 'http://r:1/' })).toEqual({ baseUrl: 'http://r:1', token: 't', subject: '(OPS_TOKEN)' });
  });

  it('mints from JWT_SECRET for OPS_USER', () => {
    const c = clientConfig({ JWT_SECRET: 'x', OPS_USER: 'bob' });
    expect(c.subject).toBe('bob');
    expect(c.baseUrl).toBe('http://127.0.0.1:3004');
  });

  it('refuses production without a token or a secret, naming both variables', () => {
    expect(() => clientConfig({ NODE_ENV: 'production' })).toThrow(UsageError);
    expect(() => clientConfig({ NODE_ENV: 'production' })).toThrow(/OPS_TOKEN .* JWT_SECRET/);
  });
});
