import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses } from '@community/service';
import type { BreakerState } from '../smtp/breaker';

/**
 * What holds this service's queues back, for the reconciler's status lines (`consumers`,
 * `breakers`, `backlog`): which breaker pauses which queues and why it opened, and the rate limit
 * the queues drain at. JSON rather than metric labels: an error message is unbounded text and must
 * never become a label value (docs/EMAIL.md "Circuit breaker"). The schema is the answer's, and
 * fastify serialises from it: a field missing here would never reach the reconciler.
 */
const FlowControlBody = Type.Object({
  breakers: Type.Array(
    Type.Object({
      series: Type.String({ description: 'the `*_breaker_open` series on /metrics that carries the same state' }),
      state: Type.Union([Type.Literal('closed'), Type.Literal('open')]),
      openForMs: Type.Number({ minimum: 0 }),
      consecutiveFailures: Type.Integer({ minimum: 0 }),
      lastError: Type.String({
        description: "the provider's last failure (at most 300 characters), '' before the first",
      }),
      lastErrorAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      pauses: Type.Array(Type.String(), {
        description: 'the queues whose consumers this breaker pauses while it is open',
      }),
    }),
  ),
  rateLimits: Type.Array(
    Type.Object({
      name: Type.String({ description: 'what the limit is, in words an operator recognises' }),
      perSecond: Type.Number({
        minimum: 0,
        description: 'configured sends per second across the queues (0 = unlimited)',
      }),
      queues: Type.Array(Type.String()),
    }),
  ),
});

export type FlowControl = Static<typeof FlowControlBody>;
// The schema's state is the breaker's own vocabulary (compile-time check).
const _sameStates: [BreakerState] extends [FlowControl['breakers'][number]['state']] ? true : never = true;
void _sameStates;

/** GET /v1/flow-control: unauthenticated like /readyz, whose details already carry the same breaker state. */
export function registerFlowControlRoute(app: FastifyInstance, flowControl: () => FlowControl): void {
  app.get(
    '/v1/flow-control',
    {
      logLevel: 'warn',
      schema: {
        tags: ['ops'],
        summary: 'Breakers and rate limits, with the queues they hold back (read by the reconciler)',
        response: { 200: FlowControlBody, ...errorResponses() },
      },
    },
    async () => flowControl(),
  );
}
