import { createHmac, timingSafeEqual } from 'node:crypto';
import { NOTIFICATION_TYPES, PREFERENCE_LOCKED_TYPES, type NotificationType } from '@community/contracts';

/** What an unsubscribe link turns off: one notification type's emails, or the digest. */
export type UnsubscribeScope = Exclude<NotificationType, 'security_alert'> | 'digest';

export interface UnsubscribeClaim {
  userId: string;
  scope: UnsubscribeScope;
}

export type VerifiedToken =
  | { ok: true; claim: UnsubscribeClaim; expiresAt: Date }
  /** `invalid`: forged, tampered, malformed. `expired`: genuine, but past its expiry (or a v1 token no longer accepted). */
  | { ok: false; reason: 'invalid' | 'expired' };

export function isUnsubscribeScope(value: unknown): value is UnsubscribeScope {
  if (value === 'digest') return true;
  return (
    NOTIFICATION_TYPES.includes(value as NotificationType) &&
    !PREFERENCE_LOCKED_TYPES.includes(value as NotificationType)
  );
}

export const DEFAULT_UNSUBSCRIBE_TOKEN_TTL_MS = 60 * 24 * 3_600_000;

export interface UnsubscribeTokenOptions {
  /** How long a link works after its email was composed (UNSUBSCRIBE_TOKEN_TTL_DAYS). */
  ttlMs?: number;
  now?: () => Date;
  /**
   * Version 1 tokens (no expiry, keyed from JWT_SECRET), in emails sent before links expired: the
   * key tells a genuine one (`expired`, or honoured until `until`: UNSUBSCRIBE_LEGACY_TOKENS_UNTIL)
   * from a forgery (`invalid`). Verification only: nothing is signed with it any more.
   */
  legacy?: { jwtSecret: string; until?: Date };
}

interface Payload {
  v?: unknown;
  u?: unknown;
  s?: unknown;
  e?: unknown;
}

/**
 * Unsubscribe tokens: `base64url({v: 2, u: userId, s: scope, e: expiry in epoch seconds}).HMAC-SHA256`,
 * keyed by a key derived from UNSUBSCRIBE_TOKEN_SECRET for this purpose only. A secret of their own:
 * email-service signs them without any key that could mint an API JWT, and a token can never pass
 * as one (or the reverse). They expire (60 days by default): a leaked link stops working, and an
 * email that old is not where a user goes to manage email any more; an expired link says so and
 * points to the notification settings.
 */
export class UnsubscribeTokens {
  private readonly key: Buffer;
  private readonly legacyKey: Buffer | undefined;
  private readonly ttlMs: number;
  private readonly now: () => Date;

  constructor(
    secret: string,
    private readonly options: UnsubscribeTokenOptions = {},
  ) {
    this.key = createHmac('sha256', secret).update('email-service:unsubscribe:v2').digest();
    this.legacyKey = options.legacy
      ? createHmac('sha256', options.legacy.jwtSecret).update('email-service:unsubscribe:v1').digest()
      : undefined;
    this.ttlMs = options.ttlMs ?? DEFAULT_UNSUBSCRIBE_TOKEN_TTL_MS;
    this.now = options.now ?? (() => new Date());
  }

  sign(claim: UnsubscribeClaim): string {
    const e = Math.floor((this.now().getTime() + this.ttlMs) / 1000);
    const payload = Buffer.from(JSON.stringify({ v: 2, u: claim.userId, s: claim.scope, e })).toString('base64url');
    return `${payload}.${mac(this.key, payload)}`;
  }

  /** Refuses anything forged, truncated or malformed (`invalid`), and genuine tokens past their expiry (`expired`). */
  verify(token: unknown): VerifiedToken {
    const invalid = { ok: false, reason: 'invalid' } as const;
    if (typeof token !== 'string' || token.length > 2048) return invalid;
    const dot = token.indexOf('.');
    if (dot <= 0) return invalid;
    const payload = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1), 'base64url');
    const body = parse(payload);
    if (!body || typeof body.u !== 'string' || body.u.length === 0 || !isUnsubscribeScope(body.s)) return invalid;
    const claim = { userId: body.u, scope: body.s };
    const nowMs = this.now().getTime();
    if (body.v === 2 && typeof body.e === 'number' && Number.isSafeInteger(body.e)) {
      if (!macMatches(this.key, payload, given)) return invalid;
      const expiresAt = new Date(body.e * 1000);
      return nowMs < expiresAt.getTime() ? { ok: true, claim, expiresAt } : { ok: false, reason: 'expired' };
    }
    if (body.v === 1 && body.e === undefined) {
      if (this.legacyKey === undefined || !macMatches(this.legacyKey, payload, given)) return invalid;
      // Genuine, but issued before links expired: honoured during the transition only.
      const until = this.options.legacy?.until;
      return until !== undefined && nowMs < until.getTime()
        ? { ok: true, claim, expiresAt: until }
        : { ok: false, reason: 'expired' };
    }
    return invalid;
  }
}

function mac(key: Buffer, payload: string): string {
  return createHmac('sha256', key).update(payload).digest('base64url');
}

function macMatches(key: Buffer, payload: string, given: Buffer): boolean {
  const expected = Buffer.from(mac(key, payload), 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function parse(payload: string): Payload | undefined {
  try {
    const body: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return typeof body === 'object' && body !== null ? (body as Payload) : undefined;
  } catch {
    return undefined;
  }
}

export function unsubscribeUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/v1/unsubscribe?token=${encodeURIComponent(token)}`;
}
