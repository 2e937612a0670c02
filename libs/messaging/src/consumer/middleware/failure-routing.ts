import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelay } from '../../backoff';
import { errorClass, errorMessage, UnroutableError, type ErrorClassifier } from '../../errors';
import type { RuntimeMetrics } from '../../metrics';
import { DELIVERY, type RuntimeContext } from '../delivery';
import { failureHeaders, publishCopy, routeFailure } from '../failure';
import type { Middleware } from '../types';

export interface FailureRoutingOptions {
  queue: string;
  handler: string;
  retryDelaysMs: readonly number[];
  classifiers: readonly ErrorClassifier[];
  metrics: RuntimeMetrics;
  /** The copies' `user-id`: this connection's broker user (undefined: none set). */
  userId?: string;
}

/**
 * Where a failure ends: classified (the error's flag, then the registered classifiers), then copied
 * to the retry tier for this attempt or to the DLQ with headers that say why, on the message's own
 * confirm channel. It resolves once the broker confirmed the copy, and only then may the consumer
 * ack the original: ack first and a crash in between would lose the message. When the copy cannot
 * be published it rejects, and the consumer returns the original to the queue instead.
 *
 * A copy the broker returns as unroutable (its retry queue or DLQ is missing) is never a reason to
 * ack: the original stays unacked on its channel — no requeue, which would count toward the
 * delivery limit — and the copy is published again with backoff until a reconnect or a service
 * start has declared the queue again, loudly (error log, `messaging_unroutable_copies_total`).
 * A shutdown past its deadline ends the wait and the broker redelivers the original.
 */
export function failureRouting<E>(options: FailureRoutingOptions): Middleware<E, RuntimeContext> {
  const { queue, handler, retryDelaysMs, classifiers, metrics, userId } = options;
  return (next) => async (event, ctx) => {
    try {
      return await next(event, ctx);
    } catch (err) {
      const d = ctx[DELIVERY];
      // Already returned to the broker (shutdown): nothing to route, the broker redelivers it.
      if (d.settled) throw err;
      const labels = { queue, handler, message_type: (d.msg.properties.type as string | undefined) ?? 'unknown' };
      const cls = errorClass(err);
      metrics.failed.inc({ ...labels, error_class: cls });
      const route = routeFailure(queue, retryDelaysMs, ctx.attempt, err, classifiers);
      const headers = failureHeaders(d.msg, route, { queue, handler, attempt: ctx.attempt, err });
      for (let attempt = 0; ; attempt++) {
        try {
          await publishCopy(d.channel, d.msg, route.exchange, route.queue, headers, userId);
          break;
        } catch (publishErr) {
          if (!(publishErr instanceof UnroutableError) || ctx.signal.aborted) {
            ctx.logger.error(
              { err: errorMessage(publishErr), target: route.queue },
              'could not move failed message; returning it to the queue',
            );
            throw publishErr;
          }
          metrics.unroutableCopies.inc({ queue, destination: route.destination });
          const retryInMs = backoffDelay(attempt, { baseMs: 1000, maxMs: 30_000, jitter: 'equal' });
          ctx.logger.error(
            { target: route.queue, attempt: attempt + 1, retryInMs },
            'copy of a failed message was unroutable (queue missing); original kept unacked, retrying the copy',
          );
          await sleep(retryInMs, undefined, { signal: ctx.signal }).catch(() => {
            throw publishErr;
          });
        }
      }
      if (route.destination === 'retry') {
        metrics.retried.inc({ ...labels, tier: String(route.tierMs) });
        ctx.logger.warn(
          { err: errorMessage(err), errorClass: cls, retryIn: route.tierMs },
          'handler failed; scheduled retry',
        );
      } else {
        metrics.deadLettered.inc({ ...labels, error_class: cls });
        ctx.logger.error({ err: errorMessage(err), errorClass: cls, kind: route.kind }, 'message dead-lettered');
      }
      return undefined;
    }
  };
}
