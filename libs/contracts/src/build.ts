import { randomUUID } from 'node:crypto';
import type { EventData, EventOf, EventType } from './events';
import { EVENT_TYPES } from './events';
import { validate } from './validate';

export interface BuildEventOptions {
  /** Name of the emitting service, e.g. `community-api`. */
  producer: string;
  /** Defaults to the new event's id (the event starts its own causal chain). */
  correlationId?: string;
  /** Defaults to a random uuid. Pass one to make a rebuilt event keep its identity. */
  id?: string;
  /** Defaults to now. A Date is converted to ISO 8601. */
  occurredAt?: string | Date;
}

/**
 * Builds a v1 envelope and validates it before returning, so a producer bug fails at the producer
 * (inside its transaction) instead of as a dead letter in every consumer. Throws `ContractError`.
 */
export function buildEvent<T extends EventType>(type: T, data: EventData<T>, options: BuildEventOptions): EventOf<T> {
  const id = options.id ?? randomUUID();
  const occurredAt = options.occurredAt ?? new Date();
  const event = {
    id,
    type,
    version: EVENT_TYPES[type].version,
    occurredAt: typeof occurredAt === 'string' ? occurredAt : occurredAt.toISOString(),
    producer: options.producer,
    correlationId: options.correlationId ?? id,
    data: withoutUndefined(data),
  } as EventOf<T>;
  const result = validate(event);
  if (!result.ok) throw result.error;
  return event;
}

// `{ parentCommentId: undefined }` would disappear in JSON anyway; dropping it here makes the
// returned object equal to what consumers will receive.
function withoutUndefined<D>(data: D): D {
  if (typeof data !== 'object' || data === null) return data;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) if (value !== undefined) out[key] = value;
  return out as D;
}
