import { generateRequestDetails } from 'web-push';
import type { PushAnswer } from '../domain/answer';
import { serialisePayload } from '../domain/payload';
import type { Lease } from '../store/ledger';

export interface VapidSettings {
  subject: string;
  publicKey: string;
  privateKey: string;
}

export interface PushSender {
  /** One POST to the subscription's push service: its answer, or why there was none. */
  send(lease: Lease, signal?: AbortSignal): Promise<PushAnswer>;
}

/**
 * The request is web-push's (RFC 8291 aes128gcm encryption to the browser's keys, the RFC 8292
 * VAPID Authorization `vapid t=<JWT>, k=<public key>`, TTL, Urgency, Topic); it is sent with
 * node's fetch rather than web-push's own sendNotification, which speaks https only: the
 * development and test push services on localhost are plain http (PUSH_ALLOW_INSECURE_LOCALHOST).
 * Redirects are not followed (a push service answers, it does not redirect: a 3xx is an answer).
 */
export function createSender(vapid: VapidSettings, timeoutMs: number): PushSender {
  return {
    async send(lease, signal) {
      let details;
      try {
        details = generateRequestDetails(
          { endpoint: lease.endpoint, keys: { p256dh: lease.p256dh, auth: lease.auth } },
          serialisePayload(lease.payload),
          {
            vapidDetails: vapid,
            TTL: lease.ttlSeconds,
            urgency: lease.urgency,
            topic: lease.topic,
            contentEncoding: 'aes128gcm',
          },
        );
      } catch (err) {
        // The stored keys do not make a request (they were checked at subscription): permanent.
        return { kind: 'status', status: 400, body: `request not built: ${(err as Error).message}` };
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(details.headers)) {
        if (name.toLowerCase() !== 'content-length') headers[name] = String(value);
      }
      const timeout = AbortSignal.timeout(timeoutMs);
      try {
        const res = await fetch(details.endpoint, {
          method: 'POST',
          headers,
          body: details.body ?? undefined,
          redirect: 'manual',
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
        const body = await res.text().catch(() => '');
        return {
          kind: 'status',
          status: res.status,
          retryAfter: res.headers.get('retry-after') ?? undefined,
          body: body.slice(0, 500),
        };
      } catch (err) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        const message = timeout.aborted
          ? `no answer within ${timeoutMs} ms`
          : (cause?.code ?? cause?.message ?? (err as Error).message);
        return { kind: 'no-answer', message };
      }
    },
  };
}
