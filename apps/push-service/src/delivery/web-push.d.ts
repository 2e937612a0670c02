// The part of web-push 3.6 (no bundled types) push-service uses: the request it would send, built
// (VAPID token, aes128gcm encryption, TTL/Urgency/Topic headers), without sending it.
declare module 'web-push' {
  export interface PushSubscription {
    endpoint: string;
    keys: { p256dh: string; auth: string };
  }
  export interface RequestOptions {
    vapidDetails: { subject: string; publicKey: string; privateKey: string };
    TTL?: number;
    urgency?: 'very-low' | 'low' | 'normal' | 'high';
    topic?: string;
    contentEncoding?: 'aes128gcm' | 'aesgcm';
    headers?: Record<string, string>;
  }
  export interface RequestDetails {
    method: 'POST';
    headers: Record<string, string | number>;
    body: Buffer | null;
    endpoint: string;
  }
  export function generateRequestDetails(
    subscription: PushSubscription,
    payload: string | Buffer | null,
    options: RequestOptions,
  ): RequestDetails;
  export function generateVAPIDKeys(): { publicKey: string; privateKey: string };
}
