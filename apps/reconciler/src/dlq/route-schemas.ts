import { Type, type TProperties } from '@sinclair/typebox';
import { OpenObject } from '@community/service';
import { MAX_RATE_PER_SECOND } from './replay';

// What the DLQ console's API answers (docs/DLQ-CONSOLE.md), for fastify's serialiser and
// /openapi.json. The console and `ops dlq` read these answers whole: a dead letter, an operation and a
// group carry many columns (and headers whose keys vary), so those stay open objects, and each
// answer lists the fields a caller branches on. fastify drops what a response schema does not list.

const Described = (properties: TProperties, description?: string) =>
  Type.Object(properties, { additionalProperties: true, ...(description ? { description } : {}) });
const NullableString = Type.Union([Type.String(), Type.Null()]);

/** The list filter, as GET /v1/admin/dlq/groups and /messages read it from the query string (filter.ts). */
export const FILTER_QUERY =
  'Query: the filter (filter.ts) `queue`, `originalQueue`, `group` (a fingerprint), `q` (free text), `errorClass`, `messageType`, `state` (default pending), `since`/`until` (ISO 8601), `asOf` (the id a list answered), and `limit`; /messages also `cursor` (its nextCursor). A bad value is 400 RC_DLQ_INVALID_FILTER naming it.';

export const OpenBody = (description: string) => OpenObject({ description });

export const SummaryBody = Described({
  queues: Type.Array(OpenObject(), { description: 'every DLQ with its pending count and what the broker still holds' }),
  totalPending: Type.Number(),
  topCauses: Type.Array(OpenObject()),
  consuming: Type.Array(Type.String(), { description: 'the DLQs the ingest reads right now' }),
  check: OpenObject({ description: 'the `dlq` line of `ops status`' }),
  signedInAs: Type.String({ description: 'the operator the token was verified as' }),
});

export const GroupsBody = Type.Object({ groups: Type.Array(OpenObject()) });

export const MessagesBody = Described({
  items: Type.Array(OpenObject()),
  total: Type.Number(),
  asOf: NullableString,
  nextCursor: NullableString,
});

export const OperationsBody = Type.Object({ operations: Type.Array(OpenObject()) });

export const PreviewBody = (description: string) =>
  Described(
    {
      dryRun: Type.Literal(true),
      action: Type.String(),
      matched: Type.Number(),
      asOf: NullableString,
      byQueue: Type.Array(OpenObject()),
      byGroup: Type.Array(OpenObject()),
      sample: Type.Array(OpenObject()),
    },
    description,
  );

export const OperationStartedBody = Type.Object(
  { dryRun: Type.Literal(false), operationId: Type.String(), matched: Type.Number() },
  { description: 'The replay runs in the background: follow it at /v1/admin/dlq/operations/{id}' },
);

export const ActionBody = (description: string) =>
  Described({ dryRun: Type.Boolean(), matched: Type.Number() }, description);

/** `{ ids }` or `{ filter }`, exactly one; a dry run unless `dryRun: false` (checked by the route: RC_DLQ_INVALID_SELECTION). */
const selection = {
  ids: Type.Optional(Type.Array(Type.String({ pattern: '^\\d{1,18}$' }), { minItems: 1, maxItems: 10_000 })),
  filter: Type.Optional(OpenObject({ description: 'the list filter ({} is every pending message)' })),
  dryRun: Type.Optional(Type.Boolean({ default: true })),
};

export const SelectionBody = Type.Object(selection);
export const ReplayBody = Type.Object({
  ...selection,
  ratePerSecond: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RATE_PER_SECOND })),
});
export const DiscardBody = Type.Object({
  ...selection,
  all: Type.Optional(Type.Boolean({ description: 'with expectedCount: confirms a discard beyond the per-call bound' })),
  expectedCount: Type.Optional(Type.Integer({ minimum: 0, description: 'the count the dry run matched' })),
});
