import { commonConfig, loadConfig, type ConfigOf, type ConfigSpec } from '@community/config';

/** Names this service everywhere: logs, metrics, the AMQP connection, the pg application_name. */
export const SERVICE_NAME = 'demo-community-api';

/** This app's variables on top of the shared ones (AMQP_URL, DATABASE_URL, PORT, ...). */
export const DEMO_CONFIG = [
  ...commonConfig(SERVICE_NAME),
  {
    name: 'DEMO_TRAFFIC_RATE',
    kind: 'int',
    default: 2,
    min: 0,
    max: 10_000,
    description: 'Actions per second of the built-in traffic generator, started after listening (0 disables)',
  },
  { name: 'OUTBOX_POLL_INTERVAL_MS', kind: 'duration-ms', default: 1000, min: 10, description: 'Relay polling fallback when no NOTIFY arrives' },
  { name: 'OUTBOX_BATCH_SIZE', kind: 'int', default: 200, min: 1, max: 5000, description: 'Outbox rows per relay cycle' },
] as const satisfies ConfigSpec;

export type DemoConfig = ConfigOf<typeof DEMO_CONFIG>;

export function loadDemoConfig(env: Record<string, string | undefined> = process.env): DemoConfig {
  return loadConfig(DEMO_CONFIG, env);
}
