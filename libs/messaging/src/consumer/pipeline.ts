import type { Logger } from 'pino';
import type { ErrorClassifier } from '../errors';
import { DEFAULT_MAX_MESSAGE_BYTES, type ProducerPolicy } from '../identity';
import type { RuntimeMetrics } from '../metrics';
import type { RuntimeContext } from './delivery';
import { deadline } from './middleware/deadline';
import { failureRouting } from './middleware/failure-routing';
import { logContext } from './middleware/log-context';
import { metrics, type ConsumerSeries } from './middleware/metrics';
import { tracing, tracingEnabled } from './middleware/tracing';
import { messageSize, publisherCheck } from './middleware/identity';
import { messageProperties } from './middleware/properties';
import { validation } from './middleware/validation';
import type { Handler, MessageContext, Middleware } from './types';

/** `[a, b, c]` around `h` is `a(b(c(h)))`: the first middleware is the outermost. */
export function compose<E, C extends MessageContext>(
  middleware: ReadonlyArray<Middleware<E, C>>,
  handler: Handler<E, C>,
): Handler<E, C> {
  let h = handler;
  for (let i = middleware.length - 1; i >= 0; i--) h = middleware[i](h);
  return h;
}

export interface PipelineOptions<E> {
  queue: string;
  handler: string;
  logger: Logger;
  retryDelaysMs: readonly number[];
  classifiers: readonly ErrorClassifier[];
  metrics: RuntimeMetrics;
  series: ConsumerSeries;
  validate: (body: Buffer) => E;
  idempotencyKey?: (event: E) => string | undefined;
  /** The app's middleware; they run inside the runtime's. */
  middleware: ReadonlyArray<Middleware<E>>;
  /** The handler's deadline; undefined in batch mode, where the batch runner applies it per batch. */
  timeoutMs: number | undefined;
  /** The app's handler, or the batch terminal (joinBatch). */
  terminal: Handler<E>;
  /** Bodies larger than this are dead-lettered unparsed (default DEFAULT_MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
  /** Who may publish what; undefined: no check (a topology without `producers`). */
  producers?: ProducerPolicy;
  /** The `user-id` of the retry/DLQ copies: this connection's broker user. */
  userId?: string;
}

/**
 * Everything that happens to one message between receipt and settlement, outermost first:
 *
 *   failure routing → [tracing] → size → properties → validation → [publisher] → log context → metrics → deadline → app middleware → handler
 *
 * Tracing (a CONSUMER span continuing the producer's trace) is there only when an SDK registered a
 * propagator at the time the consumer is built; off, the pipeline is exactly as without it.
 * The publisher check is there when the topology declares `producers` (docs/MESSAGING.md "Broker
 * identity"); it runs on the validated event, whose own type is what the handler acts on.
 * Failure routing is outermost so that every failure below it, an invalid body included, ends in a
 * retry tier or the DLQ. The resolved pipeline means "ack the original"; a rejection means "return
 * it to the queue" (the failure's copy could not be published).
 */
export function buildPipeline<E>(o: PipelineOptions<E>): Handler<Buffer, RuntimeContext> {
  const app: Handler<E, MessageContext> = compose<E, MessageContext>(o.middleware, o.terminal);
  const typed = compose<E, RuntimeContext>(
    [
      ...(o.producers ? [publisherCheck<E>(o.producers)] : []),
      logContext<E>(o.idempotencyKey),
      metrics<E>({ series: o.series, logger: o.logger, timeHandler: o.timeoutMs !== undefined }),
      ...(o.timeoutMs !== undefined ? [deadline<E>(o.timeoutMs)] : []),
    ],
    app,
  );
  const routing = failureRouting<Buffer>({
    queue: o.queue,
    handler: o.handler,
    retryDelaysMs: o.retryDelaysMs,
    classifiers: o.classifiers,
    metrics: o.metrics,
    userId: o.userId,
  });
  const checked = messageSize<RuntimeContext>(o.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES)(
    messageProperties<RuntimeContext>()(validation<E, RuntimeContext>(o.validate)(typed)),
  );
  return routing(tracingEnabled() ? tracing<RuntimeContext>({ queue: o.queue, handler: o.handler })(checked) : checked);
}
