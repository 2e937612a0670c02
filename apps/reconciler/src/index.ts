/**
 * The reconciler's public entry: what code outside the app (the benchmark, end-to-end tests) builds
 * it from. Everything else under src/ is internal and may change shape without notice.
 */
export { loadReconcilerConfig } from './config';
export type { ReconcilerConfig } from './config';
export { recount } from './jobs/counters';
export { reconcilerMetrics } from './metrics';
export { createReconcilerService } from './service';
export type { ReconcilerService, ReconcilerServiceDeps } from './service';
// The status checklist's definitions, for the spec that keeps docs/RUNBOOK.md complete
// (scripts/ops/runbook.spec.ts): every check a reconciler can report names its section.
export { CHECK_NAMES, evaluateStatus, runbookFor } from './domain/status';
export type { StatusFacts } from './domain/status';
export { DLQ_RUNBOOK } from './dlq/summary';
// The lost-work kinds and the check's answer, for `ops <kind> redrive` and `ops lost-work`.
export { LOST_WORK_KINDS } from './domain/lost-work';
export type { LostWorkKind, LostWorkVerdict } from './domain/lost-work';
export type { RedriveResult } from './jobs/lost-work';
// The error catalogue, for the spec that ties every code to docs/ERRORS.md (scripts/dev/error-catalogue.spec.ts).
export { ERRORS } from './http/errors';
