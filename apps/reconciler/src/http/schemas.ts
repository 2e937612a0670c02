import { Type, type TProperties } from '@sinclair/typebox';
import { OpenObject } from '@community/service';
import { LOST_WORK_KINDS } from '../domain/lost-work';

// What the admin API answers (docs/RECONCILER.md "HTTP API"): the response schemas fastify
// serialises from and /openapi.json shows. fastify drops whatever a response schema does not list,
// so each answer names its fields, and the parts an operator reads but whose keys vary (a check's
// value, the counts of a job run, a dead letter's headers) stay open objects.

const DateTime = Type.String({ format: 'date-time' });
const NullableDateTime = Type.Union([DateTime, Type.Null()]);
/** An object with these fields, and any others the code adds later (an operator-facing answer, not a contract). */
const Described = (properties: TProperties, description?: string) =>
  Type.Object(properties, { additionalProperties: true, ...(description ? { description } : {}) });
const Counts = Type.Object({}, { additionalProperties: Type.Number(), description: 'counts by name' });

export const StatusBody = Type.Object({
  ok: Type.Boolean({ description: 'every check passes' }),
  checks: Type.Array(
    Described({
      name: Type.String(),
      ok: Type.Boolean(),
      value: Type.Unknown(),
      threshold: Type.Unknown(),
      runbook: Type.String({ description: 'the docs/RUNBOOK.md section to follow when it fails' }),
      detail: Type.String(),
    }),
  ),
});

const JobRun = Described({
  runId: Type.String(),
  holder: Type.String(),
  outcome: Type.String(),
  startedAt: DateTime,
  finishedAt: NullableDateTime,
  durationMs: Type.Union([Type.Number(), Type.Null()]),
  counts: Type.Union([Counts, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
});

export const JobsBody = Type.Object({
  jobs: Type.Array(
    Type.Object({ job: Type.String(), intervalMs: Type.Number(), lastRun: Type.Union([JobRun, Type.Null()]) }),
  ),
});

export const JobRunBody = Described({
  job: Type.String(),
  runId: Type.String(),
  outcome: Type.String(),
  dryRun: Type.Boolean(),
  counts: Type.Union([Counts, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
});

export const RecountInlineBody = Described(
  {
    mode: Type.Literal('inline'),
    dryRun: Type.Boolean(),
    checked: Type.Number(),
    drifted: Type.Number(),
    repaired: Type.Number(),
    batches: Type.Number(),
    drifts: Type.Array(OpenObject(), { description: 'the first 100 drifts found' }),
  },
  'One user, or a dry run of everyone, recounted in this request',
);

export const RecountQueuedBody = Type.Object(
  {
    mode: Type.Literal('queued'),
    dryRun: Type.Literal(false),
    batches: Type.Integer(),
    correlationId: Type.String(),
  },
  { description: 'Everyone, for real: one message per batch on reconciler.low-priority' },
);

export const FeedRebuildBody = Described({
  dryRun: Type.Boolean(),
  userId: Type.Optional(Type.String()),
  all: Type.Optional(Type.Literal(true)),
});

export const WhyBody = Described({
  userId: Type.String(),
  steps: Type.Array(
    Type.Object({
      step: Type.String({ description: 'event.received, event.validated, … email.smtp, dead-letter' }),
      status: Type.Union(['ok', 'skipped', 'failed', 'pending', 'unknown'].map((s) => Type.Literal(s))),
      detail: Type.String(),
    }),
  ),
  verdict: Type.String(),
});

const LostQueue = Described({
  queue: Type.String(),
  due: Type.Number(),
  held: Type.Number(),
  lost: Type.Number(),
  kinds: Type.Array(
    Described({
      kind: Type.String(),
      queue: Type.String(),
      rows: Type.Number(),
      oldest: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
});

export const LostWorkBody = Described({ ok: Type.Boolean(), queues: Type.Array(LostQueue), detail: Type.String() });

export const RedriveBody = Described({
  kind: Type.Union(LOST_WORK_KINDS.map((k) => Type.Literal(k))),
  dryRun: Type.Boolean(),
  since: Type.String(),
  until: Type.String(),
  matched: Type.Number(),
  more: Type.Boolean(),
  republished: Type.Number(),
  skipped: Type.Array(Type.Object({ id: Type.String(), reason: Type.String() })),
  sample: Type.Array(Described({ id: Type.String(), queue: Type.String(), at: Type.String() })),
  oldest: Type.Union([Type.String(), Type.Null()]),
  newest: Type.Union([Type.String(), Type.Null()]),
});

const ErasureFields = {
  erasureId: Type.String(),
  userId: Type.String(),
  requestedBy: Type.String({ description: 'the operator the admin token was verified as' }),
  eventId: Type.String({ description: 'the id of its user.erased event' }),
  requestedAt: DateTime,
};

export const ErasureRequestedBody = Described({
  ...ErasureFields,
  replayed: Type.Boolean({ description: 'true when this Idempotency-Key had already requested it' }),
  consumers: Type.Array(Type.String(), { description: 'the queues whose consumers erase the user' }),
});

export const ErasureStatusBody = Described({
  ...ErasureFields,
  publishedAt: NullableDateTime,
  consumers: Type.Array(Type.Object({ consumer: Type.String(), processedAt: NullableDateTime })),
  done: Type.Boolean({ description: 'published, and every consumer has erased' }),
});
