import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '@community/db';
import { idempotencyKeyProblem, requestHash, storedKey } from '../domain/request-identity';
import * as requestKeys from '../store/request-keys';
import { ERRORS } from './errors';

/**
 * Producer-side dedup (docs/CONTRACT.md "Producer-side dedup (Idempotency-Key)"): every write route
 * answers a retry with its first answer, and writes (and emits) nothing the second time.
 *
 * In ONE transaction: claim (actor, key) in community_request_keys, perform the write and its
 * outbox rows, store the answer (status and body). Hence:
 * - a retry after the commit finds the answer and replays it (`Idempotent-Replayed: true`);
 * - a concurrent retry waits on the claim's primary key until the first commits, then replays: the
 *   write is never made twice;
 * - a failed write (any 4xx/5xx) rolls the claim back with it, so the key is free for the retry;
 * - a crash between the write and the answer cannot happen: both commit or neither does.
 *
 * The key is the client's `Idempotency-Key` (IDEMPOTENCY_KEY_TTL_MS), or without one the request's
 * fingerprint (`fp:<hash>`, REQUEST_FINGERPRINT_TTL_MS; 0 turns it off), so a double-click or a
 * client's blind retry within seconds is answered once too. Keys are per actor.
 */

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** On a replayed answer only (the first answer has no such header). */
export const REPLAYED_HEADER = 'idempotent-replayed';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's Idempotency-Key, checked by `checkIdempotencyKey`; undefined without one. */
    idempotencyKey?: string;
  }
}

/** What a write answers: stored as is, replayed as is. */
export interface Answer {
  status: number;
  body: unknown;
}

export interface AnswerOnceSettings {
  pool: Pool;
  /** How long a client's Idempotency-Key holds its answer (IDEMPOTENCY_KEY_TTL_MS). */
  keyTtlMs: number;
  /** How long a keyless request's fingerprint holds its answer; 0: not at all (REQUEST_FINGERPRINT_TTL_MS). */
  fingerprintTtlMs: number;
  /** "Now" for the TTLs; without it, the database's now(), which every replica shares (tests set one). */
  clock?: () => Date;
}

/** Performs `write` at most once per actor and request key, and answers with its stored answer. */
export type AnswerOnce = (
  request: FastifyRequest,
  reply: FastifyReply,
  write: (tx: PoolClient) => Promise<Answer>,
) => Promise<FastifyReply>;

/**
 * onRequest, after the actor and the rate limit (a stranger learns nothing from a 400, and a retry
 * still counts against the budget): a malformed key is refused before anything is read or written.
 */
export async function checkIdempotencyKey(request: FastifyRequest): Promise<void> {
  const value = request.headers[IDEMPOTENCY_KEY_HEADER];
  const problem = idempotencyKeyProblem(value);
  if (problem !== undefined) throw ERRORS.IDEMPOTENCY_KEY_INVALID(problem);
  request.idempotencyKey = value as string | undefined;
}

/** A claim that finds a row which then disappears (purged in between) claims again, this many times. */
const MAX_CLAIMS = 3;

export function answerOnce(settings: AnswerOnceSettings): AnswerOnce {
  const { pool } = settings;
  return async (request, reply, write) => {
    const key = request.idempotencyKey;
    const ttlMs = key === undefined ? settings.fingerprintTtlMs : settings.keyTtlMs;
    if (ttlMs === 0) {
      // Keyless, and fingerprints are off: the write as it always was.
      const answer = await withTransaction(pool, write);
      return reply.code(answer.status).send(answer.body);
    }
    const actor = request.actor?.keyScope;
    // Every write route has an actor hook (http/write-guards.ts); a route without one is a bug.
    if (actor === undefined) throw new Error(`${request.method} ${request.url}: no actor to scope its request key`);
    const hash = requestHash({
      method: request.method,
      route: request.routeOptions.url ?? request.url,
      params: request.params,
      body: request.body,
    });
    const stored = storedKey(key, hash);
    const now = settings.clock?.();

    const outcome = await withTransaction(
      pool,
      async (tx): Promise<{ replay?: requestKeys.StoredAnswer; answer?: Answer }> => {
        for (let attempt = 1; ; attempt++) {
          // Waits here while another transaction holds the same (actor, key) uncommitted.
          if (await requestKeys.claim(tx, { actor, key: stored, requestHash: hash, ttlMs, now })) break;
          const replay = await requestKeys.liveAnswer(tx, actor, stored, now);
          if (replay !== undefined) return { replay };
          if (attempt === MAX_CLAIMS) throw new Error(`request key (${actor}, ${stored}) could not be claimed`);
        }
        if (settings.fingerprintTtlMs > 0) await requestKeys.forgetOtherFingerprints(tx, actor, stored);
        const answer = await write(tx);
        await requestKeys.storeAnswer(tx, { actor, key: stored, status: answer.status, body: answer.body });
        return { answer };
      },
    );

    if (outcome.replay !== undefined) {
      // Only a client key can meet another hash: a fingerprint is the hash.
      if (outcome.replay.requestHash !== hash) throw ERRORS.IDEMPOTENCY_KEY_REUSED();
      return reply.code(outcome.replay.status).header(REPLAYED_HEADER, 'true').send(outcome.replay.body);
    }
    const answer = outcome.answer as Answer;
    return reply.code(answer.status).send(answer.body);
  };
}
