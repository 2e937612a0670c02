// Its own module, not app.ts: app.ts imports every route file, so a route importing this type from
// app.ts would close an import cycle (scripts/dev/no-cycles.spec.ts).
import type { onRequestHookHandler } from 'fastify';

/** The write routes' onRequest hooks: who acts (http/actor.ts), then the rate limit on that actor. */
export interface WriteGuards {
  userWrite: onRequestHookHandler[];
  profileWrite: onRequestHookHandler[];
  securityAlert: onRequestHookHandler[];
}
