/**
 * notification-service's public entry: what code outside the app (end-to-end and tracing tests,
 * benchmarks) builds it from. Everything else under src/ is internal and may change shape without notice.
 */
export { loadNotificationConfig } from './config';
export { createNotificationService } from './service';
export type { NotificationService, NotificationServiceDeps } from './service';
// The reads the reconciler's GET /v1/admin/why composes (docs/RECONCILER.md "Why").
export { notificationsAbout, notificationsCreated, storedPreferences, type NotificationFact } from './store/why-facts';
