import { Registry } from 'prom-client';
import { pushMetrics } from './metrics';

it('names every series push_… with base units', async () => {
  const registry = new Registry();
  pushMetrics(registry);
  const names = (await registry.getMetricsAsJSON()).map((m) => m.name).sort();
  expect(names).toEqual([
    'push_attempts_total',
    'push_decisions_total',
    'push_deliveries_purged_total',
    'push_read_checks_total',
    'push_send_seconds',
    'push_subscription_changes_total',
  ]);
});
