import { createHmac } from 'node:crypto';
import { NOTIFICATION_TYPES, PREFERENCE_LOCKED_TYPES, type NotificationType } from '@community/contracts';
import type { UnsubscribeScope } from './token';

export class PreferencesSyncError extends Error {
  override name = 'PreferencesSyncError';
}

/**
 * Pushes an opt-out to notification-service, which owns preferences (docs/NOTIFICATIONS.md):
 * `PUT /v1/users/:userId/preferences` with `{ "preferences": { "<type>": { "email": "off" } } }`.
 * The PUT changes only the types and channels it names, so the in-app setting and every other type
 * stay as the user left them. Authorised by a short-lived HS256 JWT, `scope: admin`, signed with
 * JWT_SECRET.
 *
 * A digest opt-out turns off every type whose email channel is currently `digest`, which takes a
 * GET first (`{ "preferences": { "<type>": { inApp, email } } }`, effective values).
 */
export class PreferencesClient {
  constructor(
    private readonly baseUrl: string,
    private readonly jwtSecret: string,
    private readonly timeoutMs = 5_000,
  ) {}

  async optOut(userId: string, scope: UnsubscribeScope): Promise<void> {
    const types = scope === 'digest' ? await this.digestTypes(userId) : [scope];
    if (types.length === 0) return; // nothing goes to the digest any more: the opt-out already holds
    const preferences = Object.fromEntries(types.map((t) => [t, { email: 'off' }]));
    const res = await this.request('PUT', userId, { preferences });
    if (!res.ok) throw new PreferencesSyncError(`PUT preferences of ${userId}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  }

  private async digestTypes(userId: string): Promise<NotificationType[]> {
    const res = await this.request('GET', userId);
    if (!res.ok) throw new PreferencesSyncError(`GET preferences of ${userId}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
    const body = (await res.json()) as { preferences?: Record<string, { email?: unknown } | undefined> };
    return NOTIFICATION_TYPES.filter((t) => !PREFERENCE_LOCKED_TYPES.includes(t) && body.preferences?.[t]?.email === 'digest');
  }

  private request(method: 'GET' | 'PUT', userId: string, body?: unknown): Promise<Response> {
    return fetch(`${this.baseUrl.replace(/\/+$/, '')}/v1/users/${encodeURIComponent(userId)}/preferences`, {
      method,
      headers: { authorization: `Bearer ${this.adminToken()}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
  }

  /** A 5-minute HS256 JWT: `sub` email-service, `scope` admin. */
  private adminToken(): string {
    const now = Math.floor(Date.now() / 1000);
    const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const unsigned = `${enc({ alg: 'HS256', typ: 'JWT' })}.${enc({ sub: 'email-service', scope: 'admin', iat: now, exp: now + 300 })}`;
    return `${unsigned}.${createHmac('sha256', this.jwtSecret).update(unsigned).digest('base64url')}`;
  }
}
