// Its own module, not app.ts: app.ts imports every route file, so a route importing this type from
// app.ts would close an import cycle (scripts/dev/no-cycles.spec.ts).
import type { onRequestHookHandler } from 'fastify';
import type { Pool } from 'pg';
import type { AnswerOnce } from './answer-once';

/** The write routes' onRequest hooks: who acts (http/actor.ts), the rate limit on that actor, the Idempotency-Key check. */
export interface WriteGuards {
  userWrite: onRequestHookHandler[];
  profileWrite: onRequestHookHandler[];
  securityAlert: onRequestHookHandler[];
}

/** What every write route is registered with. */
export interface WriteRouteDeps {
  pool: Pool;
  guards: WriteGuards;
  /** Each write at most once per actor and request key (http/answer-once.ts). */
  answerOnce: AnswerOnce;
}
