import { Registry } from 'prom-client';
import { notificationMetrics } from './metrics';

it("names every service series notification_* (docs/SERVICE-TEMPLATE.md, 'Metrics')", async () => {
  const registry = new Registry();
  notificationMetrics(registry);
  const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
  expect(names.length).toBeGreaterThan(0);
  for (const name of names) expect(name).toMatch(/^notification_[a-z_]+$/);
});
