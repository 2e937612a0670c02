import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_MAX_MESSAGE_BYTES } from '@community/messaging';
import { EMAIL_CONFIG_SPEC, loadEmailConfig, sendHandlerTimeoutMs } from '../../../apps/email-service/src';

const ROOT = path.resolve(__dirname, '../../..');
const conf = readFileSync(path.join(ROOT, 'infra/rabbitmq/rabbitmq.conf'), 'utf8');
const setting = (key: string): string | undefined =>
  conf.match(new RegExp(`^${key.replace(/\./g, '\\.')}\\s*=\\s*(.+)$`, 'm'))?.[1].trim();

it('sets consumer_timeout above the longest handler deadline (email send at the largest allowed breaker hold)', () => {
  const maxHold = EMAIL_CONFIG_SPEC.find((v) => v.name === 'SMTP_BREAKER_MAX_HOLD_MS') as { max: number };
  const defaults = loadEmailConfig({});
  const longest = sendHandlerTimeoutMs({
    SMTP_BREAKER_MAX_HOLD_MS: maxHold.max,
    EMAIL_LEASE_MS: defaults.EMAIL_LEASE_MS,
  });
  expect(Number(setting('consumer_timeout'))).toBeGreaterThan(longest);
  expect(longest).toBe(1_470_000); // the figure the comment in rabbitmq.conf gives
});

it('loads the generated definitions from where docker-compose.yml and the cluster mount them', () => {
  expect(setting('definitions.import_backend')).toBe('local_filesystem');
  expect(setting('definitions.local.path')).toBe('/etc/rabbitmq/definitions.d');
  expect(setting('cluster_name')).toBe('community');
});

it('sets max_message_size to the consumers’ limit (the messaging runtime’s DEFAULT_MAX_MESSAGE_BYTES), far below the broker’s 128 MiB default', () => {
  expect(Number(setting('max_message_size'))).toBe(DEFAULT_MAX_MESSAGE_BYTES);
  expect(DEFAULT_MAX_MESSAGE_BYTES).toBe(1_048_576);
});
