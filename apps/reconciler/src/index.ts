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
