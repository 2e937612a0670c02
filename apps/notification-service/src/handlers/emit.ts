import { notificationHeaders, type EventOf } from '@community/contracts';
import { TransientError, type Publisher } from '@community/messaging';
import { propagationEnabled, startPublishSpan, type TraceCarrier } from '@community/outbox';
import { SERVICE_NAME, type EmissionCrashPoint } from '../config';

/** One notification.created to publish, and the trace context it continues (its source message's consumer span). */
export interface Emission {
  event: EventOf<'notification.created'>;
  trace: TraceCarrier | null;
}

/**
 * Publishes a committed batch's notification.created messages and resolves once the broker has
 * confirmed every one (docs/NOTIFICATIONS.md "Emission"). The batch handler awaits it before it
 * returns, and the runtime acks the source messages only after that: commit → confirms → ack.
 */
export type Emit = (emissions: readonly Emission[]) => Promise<void>;

/** A notification.created the broker did not confirm: the batch is retried, and the retry re-emits from the rows. */
export class EmissionError extends TransientError {
  override name = 'EmissionError';
  constructor(failed: number, total: number, cause: unknown) {
    super(
      `${failed} of ${total} notification.created not confirmed by the broker (the effects are committed; the retry re-emits them): ${
        cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)
      }`,
      'EMISSION_UNCONFIRMED',
    );
  }
}

/**
 * The emitter of a service: every message on the one confirm channel of its publisher, enqueued in
 * batch order without awaiting in between (so they leave in that order) and confirmed together.
 * `crashAt` (FAULT_CRASH_AT, tests only) SIGKILLs the process at that point of a batch.
 */
export function createEmitter(publisher: Publisher, crashAt: EmissionCrashPoint = 'none'): Emit {
  const crash = (point: EmissionCrashPoint) => {
    if (crashAt === point) process.kill(process.pid, 'SIGKILL');
  };
  return async (emissions) => {
    if (emissions.length === 0) return;
    crash('after-commit');
    const tracing = propagationEnabled();
    const half = Math.ceil(emissions.length / 2);
    let confirmed = 0;
    const outcomes = await Promise.allSettled(
      emissions.map(async ({ event, trace }) => {
        const headers = notificationHeaders(event);
        const span = startPublishSpan(
          {
            eventId: event.id,
            eventType: event.type,
            routingKey: event.type,
            aggregateId: event.data.userId,
            traceContext: trace,
          },
          SERVICE_NAME,
          tracing,
        );
        try {
          await publisher.publish(event, { headers: { ...headers, ...span.headers } });
          span.end();
        } catch (err) {
          span.end(err);
          throw err;
        }
        if (++confirmed === half && emissions.length > 1) crash('after-some-confirms');
      }),
    );
    const failures = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failures.length) throw new EmissionError(failures.length, emissions.length, failures[0].reason);
    crash('after-confirms');
  };
}
