import { createHmac, generateKeyPairSync } from 'node:crypto';
import {
  DEV_EMAIL_SERVICE_SIGNING_KEY,
  DEV_PUSH_SERVICE_SIGNING_KEY,
  DEV_PUSH_SERVICE_VERIFY_KEY,
} from '@community/config';
import { createSigner } from 'fast-jwt';
import { serviceTokenSigner } from '@community/service';
import { loadNotificationConfig } from '../src/config';
import { bearer, JWT_SECRET, OPERATORS, startHarness, type Harness } from './harness';

/**
 * email-service's service tokens (docs/EMAIL.md "Secrets"): signed with its own Ed25519 key, they
 * may read a user's preferences and turn email channels off, nothing else. A token that claims the
 * same issuer and scope but is signed with JWT_SECRET (what any holder of the shared secret could
 * mint) gets none of that; neither does one signed with another key, for another audience, or expired.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness('svctokens', { amqp: false });
});
afterAll(async () => h.close());

const optOutToken = serviceTokenSigner({
  signingKey: DEV_EMAIL_SERVICE_SIGNING_KEY,
  issuer: 'email-service',
  audience: 'notification-service',
  scope: 'preferences:opt-out',
});
const prefs = (user: string, token: string) =>
  h.app.inject({ url: `/v1/users/${user}/preferences`, headers: bearer(token) });
const put = (user: string, token: string, preferences: unknown) =>
  h.app.inject({
    method: 'PUT',
    url: `/v1/users/${user}/preferences`,
    headers: { ...bearer(token), 'content-type': 'application/json' },
    payload: JSON.stringify({ preferences }),
  });

/** An HS256 JWT signed with the shared JWT_SECRET, with whatever claims. */
function hs256(claims: Record<string, unknown>): string {
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const unsigned = `${enc({ alg: 'HS256', typ: 'JWT' })}.${enc(claims)}`;
  return `${unsigned}.${createHmac('sha256', JWT_SECRET).update(unsigned).digest('base64url')}`;
}

it('reads any user preferences and turns email channels off', async () => {
  const token = optOutToken();
  expect((await prefs('ana', token)).statusCode).toBe(200);
  const res = await put('ana', token, { mention: { email: 'off' }, follow: { email: 'off' } });
  expect(res.statusCode).toBe(200);
  expect(res.json().preferences).toMatchObject({ mention: { email: 'off', inApp: true }, follow: { email: 'off' } });
  expect((await prefs('ana', h.token('ana'))).json().preferences.mention.email).toBe('off'); // the user sees it
});

it('403 when it turns email on, touches in-app, or goes to another route', async () => {
  const token = optOutToken();
  const quiet = await h.app.inject({
    method: 'PUT',
    url: '/v1/users/bob/preferences',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    payload: JSON.stringify({ quietHours: { start: '22:00', end: '07:00' } }),
  });
  expect(quiet.statusCode).toBe(403);
  expect(quiet.json().code).toBe('NS_SERVICE_FORBIDDEN');
  for (const body of [
    { mention: { email: 'immediate' } },
    { reply: { email: 'digest' } },
    { mention: { inApp: false } },
    { mention: { email: 'off', inApp: false } },
  ]) {
    const res = await put('bob', token, body);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      code: 'NS_SERVICE_FORBIDDEN',
      message: "a service token of 'email-service' may not change preferences other than turning email off",
    });
  }
  expect((await prefs('bob', h.token('bob'))).json().preferences.mention).toEqual({
    inApp: true,
    email: 'immediate',
    push: true,
  }); // unchanged

  for (const url of ['/v1/users/bob/notifications', '/v1/users/bob/notifications/unread-count']) {
    const res = await h.app.inject({ url, headers: bearer(token) });
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('NS_SERVICE_FORBIDDEN');
  }
  const readAll = await h.app.inject({
    method: 'POST',
    url: '/v1/users/bob/notifications/read-all',
    headers: bearer(token),
  });
  expect(readAll.statusCode).toBe(403);
});

it('a token without the opt-out scope is 403 on preferences too', async () => {
  const other = serviceTokenSigner({
    signingKey: DEV_EMAIL_SERVICE_SIGNING_KEY,
    issuer: 'email-service',
    audience: 'notification-service',
    scope: 'something:else',
  })();
  expect((await prefs('carol', other)).statusCode).toBe(403);
});

it('the same claims signed with JWT_SECRET, another key, for another audience, or expired get nothing', async () => {
  const now = Math.floor(Date.now() / 1000);
  // A user token's verifier: neither iss nor aud is the user tokens' (USER_TOKEN_ISSUER/AUDIENCE), so 401.
  const forged = hs256({
    iss: 'email-service',
    sub: 'email-service',
    aud: 'notification-service',
    scope: 'preferences:opt-out',
    iat: now,
    exp: now + 300,
  });
  const viaSecret = await put('dave', forged, { mention: { email: 'off' } });
  expect(viaSecret.statusCode).toBe(401);
  expect(viaSecret.json().message).toMatch(/(aud|iss) claim value is not allowed/);
  // With the user tokens' iss and aud: a user token of subject 'email-service', not dave's.
  const asUser = hs256({
    iss: 'community-site',
    sub: 'email-service',
    aud: 'community-notifications',
    scope: 'preferences:opt-out',
    iat: now,
    exp: now + 300,
  });
  expect((await put('dave', asUser, { mention: { email: 'off' } })).json()).toMatchObject({
    statusCode: 403,
    code: 'NS_FORBIDDEN_INBOX',
  });
  expect((await prefs('dave', asUser)).statusCode).toBe(403);

  const { privateKey } = generateKeyPairSync('ed25519');
  const otherKey = serviceTokenSigner({
    signingKey: privateKey,
    issuer: 'email-service',
    audience: 'notification-service',
    scope: 'preferences:opt-out',
  })();
  const wrongAudience = serviceTokenSigner({
    signingKey: DEV_EMAIL_SERVICE_SIGNING_KEY,
    issuer: 'email-service',
    audience: 'feed-service',
    scope: 'preferences:opt-out',
  })();
  const wrongIssuer = serviceTokenSigner({
    signingKey: DEV_EMAIL_SERVICE_SIGNING_KEY,
    issuer: 'demo-community-api',
    audience: 'notification-service',
    scope: 'preferences:opt-out',
  })();
  // Expired by construction, not by waiting for it: issued ten minutes ago with a five-minute life
  // (the signer's own clock is set back), otherwise exactly what serviceTokenSigner signs.
  const expired = createSigner({
    key: DEV_EMAIL_SERVICE_SIGNING_KEY,
    algorithm: 'EdDSA',
    iss: 'email-service',
    sub: 'email-service',
    aud: 'notification-service',
    expiresIn: 5 * 60_000,
    clockTimestamp: Date.now() - 10 * 60_000,
  })({ scope: 'preferences:opt-out' });
  for (const token of [otherKey, wrongAudience, wrongIssuer, expired]) {
    const res = await put('dave', token, { mention: { email: 'off' } });
    expect(res.statusCode).toBe(401);
  }
  expect((await put('dave', expired, { mention: { email: 'off' } })).json().message).toMatch(/expired/i); // refused for its expiry
  expect((await prefs('dave', h.token('dave'))).json().preferences.mention.email).toBe('immediate');
});

it('EMAIL_SERVICE_VERIFY_KEY: an Ed25519 public key, its development default refused in production, each naming the variable', () => {
  expect(() => loadNotificationConfig({ EMAIL_SERVICE_VERIFY_KEY: 'nope' })).toThrow(
    /EMAIL_SERVICE_VERIFY_KEY: not a PEM SPKI public key/,
  );
  expect(() => loadNotificationConfig({ EMAIL_SERVICE_VERIFY_KEY: DEV_EMAIL_SERVICE_SIGNING_KEY })).toThrow(
    /EMAIL_SERVICE_VERIFY_KEY/,
  );
  expect(() => loadNotificationConfig({ NODE_ENV: 'production', JWT_SECRET: 'j'.repeat(40) })).toThrow(
    /EMAIL_SERVICE_VERIFY_KEY: the development default is refused when NODE_ENV=production/,
  );
  const key = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const pushKey = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
  expect(
    loadNotificationConfig({
      NODE_ENV: 'production',
      JWT_SECRET: 'j'.repeat(40),
      ADMIN_KEYS: OPERATORS.adminKeys,
      EMAIL_SERVICE_VERIFY_KEY: key,
      PUSH_SERVICE_VERIFY_KEY: pushKey,
    }).EMAIL_SERVICE_VERIFY_KEY.trim(),
  ).toBe(key.trim());
});

it('PUSH_SERVICE_VERIFY_KEY: the same rules, each naming the variable', () => {
  expect(() => loadNotificationConfig({ PUSH_SERVICE_VERIFY_KEY: 'nope' })).toThrow(
    /PUSH_SERVICE_VERIFY_KEY: not a PEM SPKI public key/,
  );
  expect(() => loadNotificationConfig({ PUSH_SERVICE_VERIFY_KEY: DEV_PUSH_SERVICE_SIGNING_KEY })).toThrow(
    /PUSH_SERVICE_VERIFY_KEY: is a private key/,
  );
  const key = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const production = { NODE_ENV: 'production', JWT_SECRET: 'j'.repeat(40), ADMIN_KEYS: OPERATORS.adminKeys };
  expect(() => loadNotificationConfig({ ...production, EMAIL_SERVICE_VERIFY_KEY: key })).toThrow(
    /PUSH_SERVICE_VERIFY_KEY: the development default is refused when NODE_ENV=production/,
  );
  expect(loadNotificationConfig({}).PUSH_SERVICE_VERIFY_KEY).toBe(DEV_PUSH_SERVICE_VERIFY_KEY);
});
