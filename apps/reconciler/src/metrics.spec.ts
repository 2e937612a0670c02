import { Registry } from 'prom-client';
import { reconcilerMetrics } from './metrics';

it("names every service series reconciler_* (docs/SERVICE-TEMPLATE.md, 'Metrics')", async () => {
  const registry = new Registry();
  reconcilerMetrics(registry);
  const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
  expect(names).toEqual(
    expect.arrayContaining([
      'reconciler_job_runs_total',
      'reconciler_counter_drift_users',
      'reconciler_counter_drift_abs',
      'reconciler_watchdog_findings',
      'reconciler_outbox_lag_seconds',
    ]),
  );
  for (const name of names) expect(name).toMatch(/^reconciler_[a-z_]+$/);
});
