import { createHmac } from 'node:crypto';
import { UnsubscribeTokens } from './token';

const DAY = 86_400_000;
const SECRET = 'a-secret-that-is-long-enough-for-tests';
const JWT_SECRET = 'the-api-jwt-secret-which-is-another-one';

/** A version 1 token exactly as email-service signed them before links expired. */
function v1Token(jwtSecret: string, userId: string, scope: string): string {
  const key = createHmac('sha256', jwtSecret).update('email-service:unsubscribe:v1').digest();
  const payload = Buffer.from(JSON.stringify({ v: 1, u: userId, s: scope })).toString('base64url');
  return `${payload}.${createHmac('sha256', key).update(payload).digest('base64url')}`;
}

describe('unsubscribe tokens', () => {
  const tokens = new UnsubscribeTokens(SECRET);

  it('round-trips, and refuses other secrets, tampering and unsubscribable scopes', () => {
    const token = tokens.sign({ userId: 'u:1', scope: 'reaction' });
    expect(tokens.verify(token)).toMatchObject({ ok: true, claim: { userId: 'u:1', scope: 'reaction' } });
    expect(new UnsubscribeTokens('another-secret-entirely-0123456789').verify(token)).toEqual({
      ok: false,
      reason: 'invalid',
    });
    expect(tokens.verify(`${token}x`)).toEqual({ ok: false, reason: 'invalid' });
    expect(tokens.verify(tokens.sign({ userId: 'u', scope: 'security_alert' as never }))).toEqual({
      ok: false,
      reason: 'invalid',
    });
    expect(tokens.verify(undefined)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('expires after its TTL, and a changed expiry is a forgery, not a longer life', () => {
    let now = new Date('2027-01-01T00:00:00Z');
    const clocked = new UnsubscribeTokens(SECRET, { ttlMs: 60 * DAY, now: () => now });
    const token = clocked.sign({ userId: 'alice', scope: 'mention' });
    expect(clocked.verify(token)).toMatchObject({ ok: true, expiresAt: new Date('2027-03-02T00:00:00Z') });
    now = new Date(now.getTime() + 60 * DAY - 1_000);
    expect(clocked.verify(token).ok).toBe(true);
    now = new Date(now.getTime() + 1_000);
    expect(clocked.verify(token)).toEqual({ ok: false, reason: 'expired' });

    const [payload, mac] = token.split('.');
    const body = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const extended = Buffer.from(JSON.stringify({ ...body, e: (body.e as number) + 3650 * 86_400 })).toString(
      'base64url',
    );
    expect(clocked.verify(`${extended}.${mac}`)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('is not signed with JWT_SECRET: a token keyed from it (the old scheme) does not pass as a new one', () => {
    const fromJwtSecret = new UnsubscribeTokens(JWT_SECRET).sign({ userId: 'alice', scope: 'mention' });
    expect(new UnsubscribeTokens(SECRET, { legacy: { jwtSecret: JWT_SECRET } }).verify(fromJwtSecret)).toEqual({
      ok: false,
      reason: 'invalid',
    });
  });

  it('old version 1 tokens (no expiry): expired, or honoured until the configured instant; forged ones are invalid', () => {
    const old = v1Token(JWT_SECRET, 'alice', 'follow');
    let now = new Date('2027-01-01T00:00:00Z');
    const noTransition = new UnsubscribeTokens(SECRET, { now: () => now, legacy: { jwtSecret: JWT_SECRET } });
    expect(noTransition.verify(old)).toEqual({ ok: false, reason: 'expired' });
    expect(noTransition.verify(v1Token('a-guessed-secret-0123456789abcdef', 'alice', 'follow'))).toEqual({
      ok: false,
      reason: 'invalid',
    });

    const until = new Date('2027-03-01T00:00:00Z');
    const transition = new UnsubscribeTokens(SECRET, { now: () => now, legacy: { jwtSecret: JWT_SECRET, until } });
    expect(transition.verify(old)).toEqual({ ok: true, claim: { userId: 'alice', scope: 'follow' }, expiresAt: until });
    now = until;
    expect(transition.verify(old)).toEqual({ ok: false, reason: 'expired' });
  });
});
