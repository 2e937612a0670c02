import { Registry } from 'prom-client';
import { emailMetrics } from './metrics';

it("names every service series email_* (docs/SERVICE-TEMPLATE.md, 'Metrics')", async () => {
  const registry = new Registry();
  emailMetrics(registry);
  const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
  expect(names.length).toBeGreaterThan(0);
  for (const name of names) expect(name).toMatch(/^email_[a-z_]+$/);
});
