/**
 * notification-service's public entry: what code outside the app (end-to-end and tracing tests,
 * benchmarks) builds it from. Everything else under src/ is internal and may change shape without notice.
 */
export { loadNotificationConfig } from './config';
export { createNotificationService } from './service';
export type { NotificationService, NotificationServiceDeps } from './service';
// The unread-counter recount and repair, which the reconciler schedules (apps/reconciler/src/jobs/counters.ts):
// the counters' SQL and lock order stay with the tables' owner.
export { counterBatchBoundaries, recountCounterBatch } from './store/counter-repair';
export type { CounterBatch, CounterBatchOptions, Drift } from './store/counter-repair';
// The reads the reconciler's GET /v1/admin/why composes (docs/RECONCILER.md "Why").
export {
  notificationsAbout,
  notificationsCreated,
  storedPreferences,
  type CreatedFact,
  type NotificationFact,
} from './store/why-facts';
// What the reconciler's lost-work check and re-drive read of notification.created (docs/RECONCILER.md
// "Lost work"): the rows are its record, and the row-to-event mapping stays here.
export {
  createdNotificationLookupSql,
  createdNotificationsSql,
  storedNotificationOf,
  type CreatedNotificationRef,
  type StoredNotificationRow,
} from './store/emission';
export { notificationCreatedOf, type StoredNotification } from './domain/notification-created';
// The error catalogue, for the spec that ties every code to docs/ERRORS.md (scripts/dev/error-catalogue.spec.ts).
export { ERRORS } from './http/errors';
