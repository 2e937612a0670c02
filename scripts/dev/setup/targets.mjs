// Where each backing service is expected: its URL from the environment, or the project's local
// default (libs/config, through ./project-rules.mjs), and the RabbitMQ management API derived from it.
import { SetupError } from './log.mjs';
import { isLocalHost, redact } from './net.mjs';
import { projectRules } from './project-rules.mjs';

const SCHEME_PORTS = {
  amqp: 5672,
  amqps: 5671,
  postgres: 5432,
  postgresql: 5432,
  redis: 6379,
  rediss: 6379,
  smtp: 1025,
  smtps: 465,
};

/** Parses a service URL from env (or its default); a malformed value fails naming the variable. */
export function target(env, name) {
  const raw = env[name] || projectRules().localDefaults[name];
  let u;
  try {
    u = new URL(raw);
  } catch {
    throw new SetupError(`${name} is not a valid URL: ${JSON.stringify(raw)}`);
  }
  const scheme = u.protocol.replace(/:$/, '');
  const port = Number(u.port) || SCHEME_PORTS[scheme];
  if (!port) throw new SetupError(`${name} has no port and an unknown scheme: ${redact(raw)}`);
  return { name, raw, url: u, host: u.hostname, port, local: isLocalHost(u.hostname) };
}

/**
 * The management API base URL with credentials, found by the services' own rule (libs/messaging's
 * managementTargetFor): RABBITMQ_MANAGEMENT_URL if set, else port 15672 on the AMQP host; credentials
 * from that URL, else from AMQP_URL, else guest/guest.
 */
export function managementUrl(env) {
  const amqp = target(env, 'AMQP_URL').raw;
  let mgmt;
  try {
    mgmt = projectRules().managementTargetFor(amqp, env.RABBITMQ_MANAGEMENT_URL || undefined);
  } catch {
    throw new SetupError(
      `RABBITMQ_MANAGEMENT_URL is not a valid URL: ${JSON.stringify(redact(env.RABBITMQ_MANAGEMENT_URL))}`,
    );
  }
  const [scheme, host] = mgmt.baseUrl.split('//');
  return `${scheme}//${encodeURIComponent(mgmt.username)}:${encodeURIComponent(mgmt.password)}@${host}`;
}
