import { Type, type TObject, type TProperties } from '@sinclair/typebox';
import './formats';

/**
 * The v1 envelope every message on `community.events` carries.
 *
 * Strictness is deliberately asymmetric:
 * - The envelope rejects unknown top-level properties (`additionalProperties: false`). Its shape is
 *   the broker contract itself; a stray field there is a producer bug worth surfacing at once.
 * - `data` objects accept *extra* properties. A producer may add a field before every consumer is
 *   upgraded (a compatible extension of the same version), and an old consumer must keep working.
 *   Required fields and the types of known fields stay strict: a missing or mistyped field is a
 *   permanent error, never something a consumer guesses around.
 */

/** Non-empty id. The upper bound only keeps garbage out of keys and indexes; real ids are far shorter. */
export const IdSchema = Type.String({ minLength: 1, maxLength: 256 });

const EventIdSchema = Type.String({ format: 'uuid' });
const TimestampSchema = Type.String({ format: 'date-time' });
const ProducerSchema = Type.String({ minLength: 1, maxLength: 128 });
export const CorrelationIdSchema = Type.String({ minLength: 1, maxLength: 256 });

/** Properties shared by every envelope, whatever its type and version. */
const commonProperties = {
  id: EventIdSchema,
  occurredAt: TimestampSchema,
  producer: ProducerSchema,
  correlationId: CorrelationIdSchema,
};

/** Builds the full envelope schema of one (type, version) pair around its `data` schema. */
export function envelopeSchema<T extends string, V extends number, D extends TObject<TProperties>>(
  type: T,
  version: V,
  data: D,
) {
  return Type.Object(
    {
      id: commonProperties.id,
      type: Type.Literal(type),
      version: Type.Literal(version),
      occurredAt: commonProperties.occurredAt,
      producer: commonProperties.producer,
      correlationId: commonProperties.correlationId,
      data,
    },
    { additionalProperties: false, $id: `${type}.v${version}` },
  );
}
