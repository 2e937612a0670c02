/**
 * The shapes every request generator shares (requests.ts picks one per app). Kept apart so the
 * per-app generators import them without importing the dispatcher that imports them.
 */
export type AppName = 'api' | 'notifications' | 'email' | 'feed' | 'push' | 'reconciler';
export const APP_NAMES: readonly AppName[] = ['api', 'notifications', 'email', 'feed', 'push', 'reconciler'];

export interface BadRequest {
  n: number;
  app: AppName;
  category: string;
  method: string;
  /** Path and query, already encoded. */
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Sent byte for byte over a socket: for what fetch refuses to send (CR/LF, NUL in headers, …). */
  raw?: Buffer;
}

export interface RequestContext {
  secret: string;
  /** An existing user with a token and an inbox (owner of the requests' target). */
  owner: string;
  /** Another existing user. */
  other: string;
  /** owner's email address (taken: a second user may not claim it). */
  ownerEmail: string;
}
