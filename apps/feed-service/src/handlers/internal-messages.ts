/**
 * The messages feed-service sends itself on its own queues (not contract events: no other service
 * produces or consumes them). They travel in the contract's envelope so the runtime's publisher,
 * metrics, logs and dead-letter headers treat them like any message, and they are validated like
 * any input: a malformed one goes to the queue's DLQ with the reason.
 */
import { randomUUID } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { QUEUES } from '@community/contracts';
import { PermanentError, type Publisher } from '@community/messaging';
import { SERVICE_NAME } from '../config';

// Named once in libs/contracts (QUEUES); the short names read better in this service's code.
export const ACTIVITY_QUEUE = QUEUES.feedActivity;
export const FANOUT_QUEUE = QUEUES.feedFanout;
export const BACKFILL_QUEUE = QUEUES.feedBackfill;

const Id = Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' });

const envelope = <T extends string, D extends ReturnType<typeof Type.Object>>(type: T, data: D) =>
  Type.Object({
    id: Type.String({ minLength: 1, maxLength: 200 }),
    type: Type.Literal(type),
    version: Type.Literal(1),
    occurredAt: Type.String({ format: 'date-time' }),
    producer: Type.String(),
    correlationId: Type.String({ minLength: 1, maxLength: 200 }),
    data,
  });

/** One chunk of a planned fan-out: its range and job are in feed_fanout_chunks / feed_fanout_jobs. */
export const FanoutChunkMessage = envelope(
  'feed.fanout-chunk',
  Type.Object({ postId: Id, chunkNo: Type.Integer({ minimum: 0 }) }),
);
/** Bring one follower's feed in line with one edge: backfill the followee's posts, or remove them. */
export const ReconcileMessage = envelope('feed.follow-reconcile', Type.Object({ followerId: Id, followeeId: Id }));

export type FanoutChunkMessage = Static<typeof FanoutChunkMessage>;
export type ReconcileMessage = Static<typeof ReconcileMessage>;

function validator<S extends typeof FanoutChunkMessage | typeof ReconcileMessage>(schema: S) {
  const check = TypeCompiler.Compile(schema);
  return (body: Buffer): Static<S> => {
    let value: unknown;
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch (err) {
      throw new PermanentError(`body is not valid JSON (${(err as Error).message})`, 'MALFORMED_JSON');
    }
    if (!check.Check(value)) {
      const first = check.Errors(value).First();
      throw new PermanentError(
        `invalid ${schema.properties.type.const} message: ${first?.path || '/'} ${first?.message ?? 'does not match'}`,
        'INVALID_MESSAGE',
      );
    }
    return value as Static<S>;
  };
}

export const validateFanoutChunk = validator(FanoutChunkMessage);
export const validateReconcile = validator(ReconcileMessage);

function wrap<T extends 'feed.fanout-chunk' | 'feed.follow-reconcile', D>(type: T, data: D, correlationId: string) {
  const id = randomUUID();
  return {
    id,
    type,
    version: 1 as const,
    occurredAt: new Date().toISOString(),
    producer: SERVICE_NAME,
    correlationId,
    data,
  };
}

/** Straight to the queue through the default exchange (the queues have no topic binding). */
export function sendFanoutChunk(
  publisher: Publisher,
  data: FanoutChunkMessage['data'],
  correlationId: string,
): Promise<void> {
  return publisher.publish(wrap('feed.fanout-chunk', data, correlationId), { exchange: '', routingKey: FANOUT_QUEUE });
}

export function sendReconcile(
  publisher: Publisher,
  data: ReconcileMessage['data'],
  correlationId: string,
): Promise<void> {
  return publisher.publish(wrap('feed.follow-reconcile', data, correlationId), {
    exchange: '',
    routingKey: BACKFILL_QUEUE,
  });
}
