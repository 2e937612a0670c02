import { createHmac } from 'node:crypto';
import Fastify from 'fastify';
import {
  commonConfig,
  DEV_ADMIN_KEY_ID,
  DEV_ADMIN_OPERATOR,
  DEV_ADMIN_SIGNING_KEY,
  loadConfig,
} from '@community/config';
import {
  adminTokenSigner,
  authGuards,
  authSettingsFrom,
  generateOperatorKey,
  registerAuth,
  tokenAuthenticator,
  TokenRefused,
  userTokenSigner,
} from '.';

const SECRET = 'current-secret-0123456789-abcdefghijkl';
const PREVIOUS = 'previous-secret-0123456789-abcdefghijk';
const settings = (env: Record<string, string> = {}) =>
  authSettingsFrom('reconciler', loadConfig(commonConfig('reconciler'), { JWT_SECRET: SECRET, ...env }));
const userToken = (secret: string, sub = 'ada') =>
  userTokenSigner({ secret, issuer: 'community-site', audience: 'community-notifications' })(sub);
const refusal = (fn: () => unknown): TokenRefused | undefined => {
  try {
    fn();
  } catch (err) {
    if (err instanceof TokenRefused) return err;
    throw err;
  }
  return undefined;
};

describe('user tokens', () => {
  it('a rotation: tokens of JWT_SECRET_PREVIOUS pass while it is set, and no longer once it is removed', () => {
    const during = tokenAuthenticator(settings({ JWT_SECRET_PREVIOUS: PREVIOUS }));
    expect(during.authenticate(userToken(PREVIOUS))).toMatchObject({ userId: 'ada', admin: false });
    expect(during.authenticate(userToken(SECRET))).toMatchObject({ userId: 'ada', admin: false });
    expect(refusal(() => tokenAuthenticator(settings()).authenticate(userToken(PREVIOUS)))?.code).toBe(
      'FAST_JWT_INVALID_SIGNATURE',
    );
  });

  it("the longest lifetime is USER_TOKEN_MAX_LIFETIME_MS (exp - iat; without iat, exp - now: e2e and the apps' auth tests)", () => {
    const now = Date.now();
    const auth = tokenAuthenticator(settings({ USER_TOKEN_MAX_LIFETIME_MS: '10m' }), () => now);
    const sign = (ttlMs: number) =>
      userTokenSigner({ secret: SECRET, issuer: 'community-site', audience: 'community-notifications', ttlMs })('ada');
    expect(auth.authenticate(sign(10 * 60_000)).expiresAt).toBeGreaterThan(now);
    expect(refusal(() => auth.authenticate(sign(11 * 60_000)))).toMatchObject({
      code: 'TOKEN_LIFETIME_TOO_LONG',
      message: expect.stringMatching(/lives longer than allowed \(660 s > 600 s\)/),
    });
  });

  it('expiry is read off the clock it is given: past exp the token is refused as fast-jwt refuses it', () => {
    let now = Date.now();
    const auth = tokenAuthenticator(settings(), () => now);
    const token = userTokenSigner({
      secret: SECRET,
      issuer: 'community-site',
      audience: 'community-notifications',
      ttlMs: 60_000,
    })('ada');
    expect(auth.authenticate(token)).toMatchObject({ userId: 'ada' });
    now += 61_000;
    expect(refusal(() => auth.authenticate(token))).toMatchObject({
      code: 'FAST_JWT_EXPIRED',
      message: expect.stringMatching(/^The token has expired at \d{4}-\d\d-\d\dT/),
    });
  });

  it('an exp that is not a number is refused, not read as never expiring', () => {
    // Signed by hand: a signer of ours would never put such an exp in.
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const forged = (exp: unknown) => {
      const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: 'ada', iss: 'community-site', aud: 'community-notifications', exp })}`;
      return `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
    };
    for (const exp of ['9999999999', [9999999999], null])
      expect(refusal(() => tokenAuthenticator(settings()).authenticate(forged(exp)))?.code).toBe(
        'FAST_JWT_INVALID_CLAIM_TYPE',
      );
  });

  it("an 'admin' scope makes no admin", () => {
    const token = userTokenSigner({ secret: SECRET, issuer: 'community-site', audience: 'community-notifications' })(
      'ada',
      { scope: 'admin' },
    );
    expect(tokenAuthenticator(settings()).authenticate(token)).toEqual({
      userId: 'ada',
      admin: false,
      expiresAt: expect.any(Number),
    });
  });
});

describe('admin tokens', () => {
  it('two keys valid at once (a rotation), each principal the operator its kid is bound to', () => {
    const old = generateOperatorKey('alice@example.org', 'alice-2026-11');
    const next = generateOperatorKey('alice@example.org', 'alice-2026-12');
    const bob = generateOperatorKey('bob', 'bob-1');
    const auth = tokenAuthenticator(settings({ ADMIN_KEYS: JSON.stringify([old.entry, next.entry, bob.entry]) }));
    for (const k of [old, next]) {
      const token = adminTokenSigner({ signingKey: k.privateKeyPem, kid: k.entry.kid, audience: 'reconciler' })();
      expect(auth.authenticate(token)).toEqual({
        userId: 'alice@example.org',
        admin: true,
        operator: { name: 'alice@example.org', kid: k.entry.kid },
        expiresAt: expect.any(Number),
      });
    }
    // Once the old entry is removed, its tokens are refused; the new key keeps working.
    const after = tokenAuthenticator(settings({ ADMIN_KEYS: JSON.stringify([next.entry, bob.entry]) }));
    expect(
      refusal(() =>
        after.authenticate(
          adminTokenSigner({ signingKey: old.privateKeyPem, kid: old.entry.kid, audience: 'reconciler' })(),
        ),
      )?.code,
    ).toBe('ADMIN_KEY_UNKNOWN');
    // bob's key under alice's kid: the signature does not verify.
    expect(
      refusal(() =>
        after.authenticate(
          adminTokenSigner({ signingKey: bob.privateKeyPem, kid: next.entry.kid, audience: 'reconciler' })(),
        ),
      )?.code,
    ).toBe('FAST_JWT_INVALID_SIGNATURE');
  });

  it('the development operator signs with the well-known key the default ADMIN_KEYS trusts', () => {
    const token = adminTokenSigner({
      signingKey: DEV_ADMIN_SIGNING_KEY,
      kid: DEV_ADMIN_KEY_ID,
      audience: 'reconciler',
    })();
    expect(tokenAuthenticator(settings()).authenticate(token)).toMatchObject({
      userId: DEV_ADMIN_OPERATOR,
      admin: true,
    });
  });

  it('the longest lifetime is ADMIN_TOKEN_MAX_LIFETIME_MS', () => {
    const k = generateOperatorKey('carol', 'carol-1');
    const auth = tokenAuthenticator(
      settings({ ADMIN_KEYS: JSON.stringify([k.entry]), ADMIN_TOKEN_MAX_LIFETIME_MS: '5m' }),
    );
    expect(
      refusal(() =>
        auth.authenticate(
          adminTokenSigner({
            signingKey: k.privateKeyPem,
            kid: 'carol-1',
            audience: 'reconciler',
            ttlMs: 6 * 60_000,
          })(),
        ),
      )?.code,
    ).toBe('TOKEN_LIFETIME_TOO_LONG');
    expect(
      auth.authenticate(
        adminTokenSigner({ signingKey: k.privateKeyPem, kid: 'carol-1', audience: 'reconciler', ttlMs: 5 * 60_000 })(),
      ).userId,
    ).toBe('carol');
  });

  it('generateOperatorKey refuses what the services would refuse at start', () => {
    expect(() => generateOperatorKey(' alice', 'a-1')).toThrow(/operator must be/);
    expect(() => generateOperatorKey('alice', 'a b')).toThrow(/kid must be/);
  });
});

describe('the guards', () => {
  it('answer with the service prefix; an admin token for another service is refused', async () => {
    const guard = authGuards({ prefix: 'XX_', resource: 'things' }).adminOnly;
    const app = Fastify();
    registerAuth(app, settings());
    app.get('/admin', { onRequest: guard }, async () => ({ ok: true }));
    const user = await app.inject({ url: '/admin', headers: { authorization: `Bearer ${userToken(SECRET)}` } });
    expect(user.statusCode).toBe(403);
    expect(user.json()).toMatchObject({ code: 'XX_ADMIN_REQUIRED' });
    const dev = adminTokenSigner({
      signingKey: DEV_ADMIN_SIGNING_KEY,
      kid: DEV_ADMIN_KEY_ID,
      audience: 'reconciler',
    })();
    expect((await app.inject({ url: '/admin', headers: { authorization: `Bearer ${dev}` } })).json()).toEqual({
      ok: true,
    });
    // An admin token for another service is refused here.
    const other = adminTokenSigner({
      signingKey: DEV_ADMIN_SIGNING_KEY,
      kid: DEV_ADMIN_KEY_ID,
      audience: 'feed-service',
    })();
    expect((await app.inject({ url: '/admin', headers: { authorization: `Bearer ${other}` } })).json()).toMatchObject({
      statusCode: 401,
      code: 'FAST_JWT_INVALID_CLAIM_VALUE',
    });
    await app.close();
  });
});
