import { Counter, Gauge, type Registry } from 'prom-client';

export interface NotificationMetrics {
  created: Counter<'type' | 'in_app'>;
  upgraded: Counter;
  withdrawn: Counter<'type'>;
  readStateChanges: Counter<'operation' | 'outcome'>;
  sseConnections: Gauge;
  sseEvents: Counter<'event'>;
  sseListenerConnected: Gauge;
}

/** Service-level series, beside the runtime's (messages, retries, DLQ) and the relay's. */
export function notificationMetrics(registry: Registry): NotificationMetrics {
  return {
    created: new Counter({
      name: 'notification_created_total',
      help: 'Notifications inserted, by type and whether they are visible in-app',
      labelNames: ['type', 'in_app'],
      registers: [registry],
    }),
    upgraded: new Counter({
      name: 'notification_upgraded_total',
      help: 'Existing notifications replaced by a higher-ranked one of the same slot (e.g. a mention after a reply)',
      registers: [registry],
    }),
    withdrawn: new Counter({
      name: 'notification_withdrawn_total',
      help: 'Notifications withdrawn because their source was deleted (comment, post, reaction, account), by type',
      labelNames: ['type'],
      registers: [registry],
    }),
    readStateChanges: new Counter({
      name: 'notification_read_state_requests_total',
      help: 'read / unread / read-all requests, by outcome (changed, unchanged, stale, not_found)',
      labelNames: ['operation', 'outcome'],
      registers: [registry],
    }),
    sseConnections: new Gauge({
      name: 'notification_sse_connections',
      help: 'Open SSE streams on this replica',
      registers: [registry],
    }),
    sseEvents: new Counter({
      name: 'notification_sse_events_total',
      help: 'SSE events written, by event name',
      labelNames: ['event'],
      registers: [registry],
    }),
    sseListenerConnected: new Gauge({
      name: 'notification_sse_listener_connected',
      help: '1 while the LISTEN connection that feeds the SSE streams is up',
      registers: [registry],
    }),
  };
}
