import { ed25519Key } from '@community/config';
import { serviceTokenSigner } from './auth';

export interface ReadStateClientOptions {
  /** notification-service's base URL, e.g. `http://notification-service:3000`. */
  baseUrl: string;
  /** The calling service's Ed25519 private key (PKCS8 PEM, `\n` escapes allowed). */
  signingKey: string;
  /** The calling service: `iss`/`sub` of its token; notification-service verifies with that service's public key. */
  issuer: 'email-service' | 'push-service';
  /** The whole request's budget, connect to body. */
  timeoutMs: number;
}

/** The most idempotency keys one call may ask about (the route's own limit). */
export const READ_STATE_MAX_KEYS = 100;

/**
 * The senders' question before a held email or push goes out (docs/NOTIFICATIONS.md "Delivery
 * timing"): has the user already read it in the app? `POST /v1/internal/read-state` on
 * notification-service with a 5-minute service token (EdDSA, `iss`/`sub` the issuer, `aud`
 * notification-service, `scope notifications:read-state`). Any failure rejects: the caller decides
 * what a missing answer means (the senders send anyway).
 */
export class ReadStateClient {
  private readonly url: string;
  private readonly token: () => string;
  private readonly timeoutMs: number;

  constructor(options: ReadStateClientOptions) {
    if (!Number.isInteger(options.timeoutMs) || options.timeoutMs <= 0)
      throw new Error(`ReadStateClient: timeoutMs must be a positive integer, got ${options.timeoutMs}`);
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/v1/internal/read-state`;
    this.timeoutMs = options.timeoutMs;
    this.token = serviceTokenSigner({
      signingKey: ed25519Key('private', options.signingKey),
      issuer: options.issuer,
      audience: 'notification-service',
      scope: 'notifications:read-state',
    });
  }

  /** POST {baseUrl}/v1/internal/read-state with a service token (aud notification-service, scope notifications:read-state); resolves the subset of idempotencyKeys whose in-app notification the user has read; rejects (an Error naming the status or the timeout) on any failure. 1..100 keys. */
  async readKeys(userId: string, idempotencyKeys: string[]): Promise<Set<string>> {
    if (idempotencyKeys.length < 1 || idempotencyKeys.length > READ_STATE_MAX_KEYS)
      throw new Error(`read-state: 1..${READ_STATE_MAX_KEYS} idempotency keys per call, got ${idempotencyKeys.length}`);
    let res: Response;
    let body: unknown;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.token()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ userId, idempotencyKeys }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      if (!res.ok) {
        const text = (await res.text()).slice(0, 300);
        throw new Error(`read-state of ${userId}: HTTP ${res.status} ${text}`);
      }
      body = await res.json();
    } catch (err) {
      const e = err as Error;
      if (e.name === 'TimeoutError' || e.name === 'AbortError')
        throw new Error(`read-state of ${userId}: timeout after ${this.timeoutMs} ms`, { cause: err });
      if (e.message.startsWith('read-state of ')) throw e;
      throw new Error(`read-state of ${userId}: ${e.message}`, { cause: err });
    }
    const read = (body as { read?: unknown } | null)?.read;
    if (!Array.isArray(read) || !read.every((k): k is string => typeof k === 'string'))
      throw new Error(`read-state of ${userId}: HTTP ${res.status} but the body has no read: string[]`);
    // Only keys asked about: the answer is a subset by contract, and a caller trusts it as one.
    const asked = new Set(idempotencyKeys);
    return new Set(read.filter((k) => asked.has(k)));
  }
}
