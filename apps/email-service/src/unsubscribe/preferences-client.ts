import { NOTIFICATION_TYPES, PREFERENCE_LOCKED_TYPES, type NotificationType } from '@community/contracts';
import { ed25519Key } from '@community/config';
import { serviceTokenSigner } from '@community/service';
import type { UnsubscribeScope } from './token';

export class PreferencesSyncError extends Error {
  override name = 'PreferencesSyncError';
}

/**
 * Pushes an opt-out to notification-service, which owns preferences (docs/NOTIFICATIONS.md):
 * `PUT /v1/users/:userId/preferences` with `{ "preferences": { "<type>": { "email": "off" } } }`.
 * The PUT changes only the types and channels it names, so the in-app setting and every other type
 * stay as the user left them. Authorised by a 5-minute service token (EdDSA, `iss`/`sub`
 * email-service, `aud` notification-service, `scope: preferences:opt-out`) signed with
 * EMAIL_SERVICE_SIGNING_KEY: notification-service lets it read preferences and turn email off,
 * nothing else, and email-service holds no key that could mint a user or admin token.
 *
 * A digest opt-out turns off every type whose email channel is currently `digest`, which takes a
 * GET first (`{ "preferences": { "<type>": { inApp, email } } }`, effective values).
 */
export class PreferencesClient {
  private readonly serviceToken: () => string;

  constructor(
    private readonly baseUrl: string,
    signingKey: string,
    private readonly timeoutMs = 5_000,
  ) {
    this.serviceToken = serviceTokenSigner({
      signingKey: ed25519Key('private', signingKey),
      issuer: 'email-service',
      audience: 'notification-service',
      scope: 'preferences:opt-out',
    });
  }

  async optOut(userId: string, scope: UnsubscribeScope): Promise<void> {
    const types = scope === 'digest' ? await this.digestTypes(userId) : [scope];
    if (types.length === 0) return; // nothing goes to the digest any more: the opt-out already holds
    const preferences = Object.fromEntries(types.map((t) => [t, { email: 'off' }]));
    const res = await this.request('PUT', userId, { preferences });
    if (!res.ok)
      throw new PreferencesSyncError(
        `PUT preferences of ${userId}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`,
      );
  }

  private async digestTypes(userId: string): Promise<NotificationType[]> {
    const res = await this.request('GET', userId);
    if (!res.ok)
      throw new PreferencesSyncError(
        `GET preferences of ${userId}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`,
      );
    const body = (await res.json()) as { preferences?: Record<string, { email?: unknown } | undefined> };
    return NOTIFICATION_TYPES.filter(
      (t) => !PREFERENCE_LOCKED_TYPES.includes(t) && body.preferences?.[t]?.email === 'digest',
    );
  }

  private request(method: 'GET' | 'PUT', userId: string, body?: unknown): Promise<Response> {
    return fetch(`${this.baseUrl.replace(/\/+$/, '')}/v1/users/${encodeURIComponent(userId)}/preferences`, {
      method,
      headers: {
        authorization: `Bearer ${this.serviceToken()}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
  }
}
