// `npm start` runs each app as its own least-privilege broker user, as a deployment does: the
// generated definitions (infra/rabbitmq/definitions.json: vhost `community`, users, permissions,
// policies, exchanges, queues, bindings) are imported into the local broker, and each app gets an
// AMQP_URL with its own user on that vhost and AMQP_TOPOLOGY=own-queues (it declares only its own
// queues and checks the policies instead of writing them). `npm test` is untouched: tests create
// vhosts of their own as guest.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { log } from './log.mjs';
import { redact } from './net.mjs';
import { target } from './targets.mjs';

/**
 * Imports the definitions with the management API's admin (guest on a development broker) and
 * returns `envFor(app)`: the app's AMQP_URL and AMQP_TOPOLOGY, or {} (the shell's AMQP_URL as is)
 * when AMQP_URL is set in the environment, the import is refused, or the app has no user.
 */
export async function ensureBrokerUsers(root, mgmt, env = process.env) {
  const none = { envFor: () => ({}), vhost: null, monitoringLogin: null };
  if (env.AMQP_URL) {
    log.warn(`AMQP_URL is set (${redact(env.AMQP_URL)}): the apps use it as given, not their own broker users`);
    return none;
  }
  const defs = readFileSync(path.join(root, 'infra/rabbitmq/definitions.json'), 'utf8');
  const { vhost, users } = JSON.parse(readFileSync(path.join(root, 'infra/rabbitmq/dev-credentials.json'), 'utf8'));
  const api = new URL(mgmt);
  const auth = Buffer.from(`${decodeURIComponent(api.username)}:${decodeURIComponent(api.password)}`).toString(
    'base64',
  );
  let res;
  try {
    res = await fetch(`${api.protocol}//${api.host}/api/definitions`, {
      method: 'POST',
      headers: { authorization: `Basic ${auth}`, 'content-type': 'application/json' },
      body: defs,
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    log.warn(
      `could not import infra/rabbitmq/definitions.json (${err.message}): the apps run as ${api.username || 'guest'}`,
    );
    return none;
  }
  if (!res.ok) {
    log.warn(
      `importing infra/rabbitmq/definitions.json: HTTP ${res.status} ${await res.text()}; the apps run as ${decodeURIComponent(api.username) || 'guest'}`,
    );
    return none;
  }
  const amqp = target(env, 'AMQP_URL');
  log.ok(`broker users and topology imported (vhost ${vhost}); each app connects as its own user`);
  return {
    vhost,
    // The management UI login for whoever is on shift: tag monitoring, no purge, delete or Get
    // messages (libs/contracts access.ts OBSERVER_USERS; docs/RUNBOOK.md "Your tools").
    monitoringLogin: users.volunteer ? { user: 'volunteer', password: users.volunteer } : null,
    envFor(app) {
      const password = users[app];
      if (!password) {
        log.warn(
          `${app} has no broker user in infra/rabbitmq/definitions.json (libs/contracts access.ts): it runs as guest on /`,
        );
        return {};
      }
      const url = `${amqp.url.protocol}//${encodeURIComponent(app)}:${encodeURIComponent(password)}@${amqp.url.host}/${encodeURIComponent(vhost)}`;
      return { AMQP_URL: url, AMQP_TOPOLOGY: 'own-queues' };
    },
  };
}
