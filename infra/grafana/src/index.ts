import path from 'node:path';
import { communityWorkers } from './community-workers';
import { rabbitmq } from './rabbitmq';

export const DASHBOARDS_DIR = path.resolve(__dirname, '../dashboards');

/** Every dashboard, by the file name it is written to in infra/grafana/dashboards/. */
export function dashboards(): Record<string, unknown> {
  return {
    'community-workers.json': withPanelIds(communityWorkers().build()),
    'rabbitmq.json': withPanelIds(rabbitmq().build()),
  };
}

/**
 * The SDK leaves panel ids unset (rows get 0); links to a panel (`viewPanel=<id>`) need unique,
 * stable ids, so they are numbered in layout order.
 */
function withPanelIds<T extends { panels?: Array<{ id?: number; panels?: Array<{ id?: number }> }> }>(d: T): T {
  let next = 1;
  for (const p of d.panels ?? []) {
    p.id = next++;
    for (const inner of p.panels ?? []) inner.id = next++;
  }
  return d;
}

/** The file contents `npm run infra:dashboards` writes: stable key order, two-space indent, newline. */
export function render(): Record<string, string> {
  return Object.fromEntries(Object.entries(dashboards()).map(([file, d]) => [file, `${JSON.stringify(d, null, 2)}\n`]));
}

export { panelQueries, substituteVariables, type PanelQuery } from './queries';
