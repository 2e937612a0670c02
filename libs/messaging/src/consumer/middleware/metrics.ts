import type { Logger } from 'pino';
import type { RuntimeMetrics } from '../../metrics';
import { DELIVERY, lagSeconds, type RuntimeContext } from '../delivery';
import type { Middleware, Outcome } from '../types';

type CounterChild = ReturnType<RuntimeMetrics['consumed']['labels']>;
type HistogramChild = ReturnType<RuntimeMetrics['lag']['labels']>;

/**
 * One consumer's labelled children of the per-message series, resolved once per message type and
 * outcome: looking labels up costs more than everything else the runtime does for a successful message.
 */
export class ConsumerSeries {
  private readonly byType = new Map<
    string,
    { consumed: CounterChild; lag: HistogramChild; done: Map<string, [CounterChild, HistogramChild]> }
  >();

  constructor(
    private readonly metrics: RuntimeMetrics,
    private readonly queue: string,
    private readonly handler: string,
  ) {}

  received(type = 'unknown') {
    let s = this.byType.get(type);
    if (!s) {
      const { metrics, queue, handler } = this;
      s = {
        consumed: metrics.consumed.labels({ queue, handler, message_type: type }),
        lag: metrics.lag.labels({ queue, message_type: type }),
        done: new Map(),
      };
      this.byType.set(type, s);
    }
    return s;
  }

  /** [succeeded counter, handler duration] for a type and outcome ('failed' for the duration of a failed call). */
  done(type: string | undefined, outcome: string): [CounterChild, HistogramChild] {
    const s = this.received(type);
    let pair = s.done.get(outcome);
    if (!pair) {
      const labels = { queue: this.queue, handler: this.handler, message_type: type ?? 'unknown', outcome };
      pair = [this.metrics.succeeded.labels(labels), this.metrics.handlerDuration.labels(labels)];
      s.done.set(outcome, pair);
    }
    return pair;
  }
}

export interface MetricsOptions {
  series: ConsumerSeries;
  /** The consumer's logger: one debug line per message, only when debug is on. */
  logger: Logger;
  /** False in batch mode, where the batch runner times the batch handler instead of each message's wait. */
  timeHandler: boolean;
}

/**
 * Counts what reached the handler (consumed, lag from the event's occurrence to its receipt) and how
 * it ended (succeeded by outcome, handler duration). Failures are counted by the failure routing,
 * which also sees the ones that never got this far (an invalid body).
 */
export function metrics<E>(options: MetricsOptions): Middleware<E, RuntimeContext> {
  const { series, logger, timeHandler } = options;
  return (next) => async (event, ctx) => {
    const msg = ctx[DELIVERY].msg;
    const type = msg.properties.type as string | undefined;
    const s = series.received(type);
    s.consumed.inc();
    const lag = lagSeconds(msg, event, ctx[DELIVERY].receivedAt);
    if (lag !== undefined) s.lag.observe(lag);
    const startedAt = performance.now();
    let outcome: Outcome | void;
    try {
      outcome = await next(event, ctx);
    } catch (err) {
      if (timeHandler) series.done(type, 'failed')[1].observe((performance.now() - startedAt) / 1000);
      throw err;
    }
    const o = outcome ?? 'processed';
    const [count, duration] = series.done(type, o);
    const seconds = (performance.now() - startedAt) / 1000;
    count.inc();
    if (timeHandler) duration.observe(seconds);
    // One line per message only at debug: at thousands of messages per second, info would drown the rest.
    if (logger.isLevelEnabled('debug'))
      ctx.logger.debug({ outcome: o, durationMs: Math.round(seconds * 1000) }, 'handled');
    return outcome;
  };
}
