// RabbitMQ plugins and the management API: tests create vhosts through it, services set policies.
import { log, SetupError } from './log.mjs';
import { httpGet, redact, waitFor } from './net.mjs';
import { findBin, run } from './system.mjs';
import { managementUrl, target } from './targets.mjs';

export const RABBITMQ_PLUGINS = [
  'rabbitmq_management',
  'rabbitmq_prometheus',
  'rabbitmq_shovel',
  'rabbitmq_shovel_management',
  'rabbitmq_consistent_hash_exchange',
];

async function enabledPluginsViaApi(mgmt) {
  const res = await httpGet(`${mgmt}/api/nodes`);
  if (!res || res.status !== 200 || !Array.isArray(res.body)) return null;
  return new Set(res.body.flatMap((n) => n.enabled_plugins ?? []));
}

function enabledPluginsViaCli(cli) {
  const res = run(cli, ['list', '-e', '-m'], { timeoutMs: 60_000 });
  if (!res.ok) return null;
  return new Set(
    res.out
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /^rabbitmq_/.test(l)),
  );
}

/**
 * Enables the RabbitMQ plugins the project relies on (management, prometheus, shovel,
 * consistent-hash) and waits until the management API answers: tests use it to create vhosts.
 */
export async function ensureRabbitPlugins(env = process.env) {
  const amqp = target(env, 'AMQP_URL');
  const mgmt = managementUrl(env);
  const cli = amqp.local ? findBin('rabbitmq-plugins') : null;

  let enabled = await enabledPluginsViaApi(mgmt);
  if (!enabled && cli) enabled = enabledPluginsViaCli(cli);
  const missing = enabled ? RABBITMQ_PLUGINS.filter((p) => !enabled.has(p)) : RABBITMQ_PLUGINS;

  if (enabled && !missing.length) {
    log.ok('RabbitMQ plugins enabled (management, prometheus, shovel, consistent-hash)');
  } else if (cli) {
    log.step(`enabling RabbitMQ plugins: ${missing.join(' ')}`);
    const res = run(cli, ['enable', ...missing], { timeoutMs: 120_000 });
    if (!res.ok) {
      throw new SetupError(
        `rabbitmq-plugins enable ${missing.join(' ')} failed (run it as root or the rabbitmq user):\n${res.out}`,
      );
    }
    log.ok('RabbitMQ plugins enabled');
  } else if (enabled) {
    log.warn(
      `RabbitMQ at ${redact(amqp.raw)} lacks plugins ${missing.join(', ')} and is not managed here; ` +
        `enable them on that broker: rabbitmq-plugins enable ${missing.join(' ')}`,
    );
  }

  const overview = await waitFor(() => httpGet(`${mgmt}/api/overview`), {
    timeoutMs: 90_000,
    intervalMs: 1000,
    onTimeout:
      `The RabbitMQ management API did not answer at ${redact(mgmt)}/api/overview within 90 s. ` +
      'Enable it (rabbitmq-plugins enable rabbitmq_management) or set RABBITMQ_MANAGEMENT_URL ' +
      '(http://user:pass@host:15672).',
  });
  if (overview.status === 401) {
    throw new SetupError(
      `The RabbitMQ management API at ${redact(mgmt)} refused the credentials (401). ` +
        'Set RABBITMQ_MANAGEMENT_URL=http://user:pass@host:15672 (guest/guest only works from localhost).',
    );
  }
  if (overview.status !== 200) {
    throw new SetupError(
      `The RabbitMQ management API at ${redact(mgmt)}/api/overview answered HTTP ${overview.status}.`,
    );
  }
  if (!enabled && !cli) {
    // Could not check before the API was up (e.g. a container still booting): check now.
    const now = await enabledPluginsViaApi(mgmt);
    const still = now ? RABBITMQ_PLUGINS.filter((p) => !now.has(p)) : [];
    if (still.length)
      log.warn(`RabbitMQ lacks plugins ${still.join(', ')}; enable them: rabbitmq-plugins enable ${still.join(' ')}`);
  }
  const version = overview.body?.rabbitmq_version;
  log.ok(`RabbitMQ management API answers${version ? ` (RabbitMQ ${version})` : ''}: ${redact(mgmt)}`);
  return mgmt;
}
