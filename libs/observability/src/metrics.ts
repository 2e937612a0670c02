import { collectDefaultMetrics, Registry } from 'prom-client';

export interface RegistryOptions {
  service: string;
}

/**
 * A registry per service instance (not prom-client's global one), so tests and several apps in one
 * process never share or double-register metrics. The `service` label is on every series,
 * including the default process/Node.js metrics, so dashboards can group by it.
 */
export function createRegistry(options: RegistryOptions): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service: options.service });
  collectDefaultMetrics({ register: registry });
  return registry;
}
