import { Counter, Histogram, type Registry } from 'prom-client';

export interface PushMetrics {
  decisions: Counter<'type' | 'outcome'>;
  attempts: Counter<'outcome'>;
  sendSeconds: Histogram;
  subscriptions: Counter<'action'>;
  purged: Counter;
  readChecks: Counter<'outcome'>;
}

/**
 * push-service's own series (docs/PUSH.md "Metrics"), beside the runtime's (messages, retries,
 * DLQ) and the HTTP server's. Bounded labels only: a notification type, an outcome from a fixed list.
 */
export function pushMetrics(registry: Registry): PushMetrics {
  return {
    decisions: new Counter({
      name: 'push_decisions_total',
      help: 'notification.created handled, by type and outcome: queued (ledger rows created, pushed now), held (rows created, due after quiet hours or the read-check delay), duplicate, withdrawn, no_subscriptions, push_off, too_old',
      labelNames: ['type', 'outcome'],
      registers: [registry],
    }),
    attempts: new Counter({
      name: 'push_attempts_total',
      help: 'Requests to push services, by what the answer did: sent, gone (404/410: subscription removed), retry (429, 5xx, no answer), failed (413, other 4xx, attempts spent, expired)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    sendSeconds: new Histogram({
      name: 'push_send_seconds',
      help: 'One request to a push service, until its answer (or none)',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    subscriptions: new Counter({
      name: 'push_subscription_changes_total',
      help: 'Subscription API results: created, exists, limit (refused), removed, gone (removed on 404/410)',
      labelNames: ['action'],
      registers: [registry],
    }),
    purged: new Counter({
      name: 'push_deliveries_purged_total',
      help: 'Finished ledger rows deleted by retention (PUSH_RETENTION_DAYS)',
      registers: [registry],
    }),
    readChecks: new Counter({
      name: 'push_read_checks_total',
      help: 'Held notifications checked with notification-service before their push (PUSH_READ_CHECK_DELAY_MS), by outcome: read (not pushed), unread (pushed), failed (the check failed: pushed anyway)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
  };
}
