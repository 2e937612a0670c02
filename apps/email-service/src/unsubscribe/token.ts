import { createHmac, timingSafeEqual } from 'node:crypto';
import { NOTIFICATION_TYPES, PREFERENCE_LOCKED_TYPES, type NotificationType } from '@community/contracts';

/** What an unsubscribe link turns off: one notification type's emails, or the digest. */
export type UnsubscribeScope = Exclude<NotificationType, 'security_alert'> | 'digest';

export interface UnsubscribeClaim {
  userId: string;
  scope: UnsubscribeScope;
}

export function isUnsubscribeScope(value: unknown): value is UnsubscribeScope {
  if (value === 'digest') return true;
  return NOTIFICATION_TYPES.includes(value as NotificationType) && !PREFERENCE_LOCKED_TYPES.includes(value as NotificationType);
}

/**
 * Unsubscribe tokens: `base64url(payload).base64url(HMAC-SHA256)`, keyed by a key derived from
 * JWT_SECRET for this purpose only, so a token can never pass as an API JWT (or the reverse).
 * They do not expire: an unsubscribe link in a years-old email must still work (RFC 8058 asks for
 * links that keep working), and all it can do is turn emails off for the user it names.
 */
export class UnsubscribeTokens {
  private readonly key: Buffer;

  constructor(jwtSecret: string) {
    this.key = createHmac('sha256', jwtSecret).update('email-service:unsubscribe:v1').digest();
  }

  sign(claim: UnsubscribeClaim): string {
    const payload = Buffer.from(JSON.stringify({ v: 1, u: claim.userId, s: claim.scope })).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** The claim, or undefined for anything forged, truncated or malformed. */
  verify(token: unknown): UnsubscribeClaim | undefined {
    if (typeof token !== 'string' || token.length > 2048) return undefined;
    const dot = token.indexOf('.');
    if (dot <= 0) return undefined;
    const payload = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1), 'base64url');
    const expected = Buffer.from(this.mac(payload), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      const body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { v?: unknown; u?: unknown; s?: unknown };
      if (body.v !== 1 || typeof body.u !== 'string' || body.u.length === 0 || !isUnsubscribeScope(body.s)) return undefined;
      return { userId: body.u, scope: body.s };
    } catch {
      return undefined;
    }
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }
}

export function unsubscribeUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/v1/unsubscribe?token=${encodeURIComponent(token)}`;
}
