/**
 * notification-service's public entry: what code outside the app (the in-process tracing test)
 * builds it from. Everything else under src/ is internal and may change shape without notice.
 */
export { loadNotificationConfig } from './config';
export { createNotificationService } from './service';
export type { NotificationService } from './service';
