import type { FastifyInstance } from 'fastify';
import type { BreakerState } from '../smtp/breaker';

/**
 * What holds this service's queues back, for the reconciler's status lines (`consumers`,
 * `breakers`, `backlog`): which breaker pauses which queues and why it opened, and the rate limit
 * the queues drain at. JSON rather than metric labels: an error message is unbounded text and must
 * never become a label value (docs/EMAIL.md "Circuit breaker").
 */
export interface FlowControl {
  breakers: Array<{
    /** The `*_breaker_open` series on /metrics that carries the same state. */
    series: string;
    state: BreakerState;
    openForMs: number;
    consecutiveFailures: number;
    /** The provider's last failure (at most 300 characters), '' before the first. */
    lastError: string;
    lastErrorAt: string | null;
    /** The queues whose consumers this breaker pauses while it is open. */
    pauses: string[];
  }>;
  rateLimits: Array<{
    /** What the limit is, in words an operator recognises. */
    name: string;
    /** Configured sends per second across the queues below (0 = unlimited). */
    perSecond: number;
    queues: string[];
  }>;
}

/** GET /v1/flow-control: unauthenticated like /readyz, whose details already carry the same breaker state. */
export function registerFlowControlRoute(app: FastifyInstance, flowControl: () => FlowControl): void {
  app.get('/v1/flow-control', { logLevel: 'warn' }, async () => flowControl());
}
