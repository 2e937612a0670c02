// `npm start` only: the stale copy of the project's queues in the default vhost `/`. Before each app
// had its own broker user on vhost `community` (broker-users.mjs), `npm start` ran every app as guest
// on `/`, and so does any run with AMQP_URL left at guest's default: each left the whole topology
// there (64 queues), with no consumer once it stopped. The management UI lists `/` first, so a
// volunteer opening it sees 64 idle queues that are not the live ones.
//
// What is removed, and only that: a queue in `/` whose name is a queue of the project's topology
// (infra/rabbitmq/definitions.json, generated from libs/messaging's plan of libs/contracts'
// topology) that has no consumer and no message. The counts are asked over AMQP (a passive declare,
// exact at that moment; the management API's figures lag by up to its stats interval) right before
// the delete. A queue holding messages or with a consumer is kept and listed: its messages may be
// someone's work, and a consumer means something still runs against `/`. No other vhost is looked
// at (test vhosts are leftovers.mjs's), and nothing happens when the apps themselves use `/`
// (AMQP_URL set in the shell: broker.vhost is null). RabbitMQ 3.10 refuses `if-unused` on quorum
// queues, so the check-then-delete is ours; its window is one round trip.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { log } from './log.mjs';
import { redact } from './net.mjs';
import { target } from './targets.mjs';

const DEFAULT_VHOST = '/';

/** The topology's queue names (work, retry and dead-letter queues) from the generated definitions. */
export function topologyQueueNames(root) {
  const defs = JSON.parse(readFileSync(path.join(root, 'infra/rabbitmq/definitions.json'), 'utf8'));
  return new Set(defs.queues.map((q) => q.name));
}

async function listQueues(mgmt, vhost) {
  const api = new URL(mgmt);
  const auth = Buffer.from(`${decodeURIComponent(api.username)}:${decodeURIComponent(api.password)}`).toString(
    'base64',
  );
  const res = await fetch(`${api.protocol}//${api.host}/api/queues/${encodeURIComponent(vhost)}?columns=name`, {
    headers: { authorization: `Basic ${auth}` },
    signal: AbortSignal.timeout(15_000),
  });
  if (!res.ok) throw new Error(`GET /api/queues/${encodeURIComponent(vhost)} answered HTTP ${res.status}`);
  return (await res.json()).map((q) => q.name);
}

/**
 * Removes the empty, unconsumed copies of the project's queues from `/` and lists the ones kept.
 * Returns { removed, kept: [{ name, messages, consumers }] }, or null when it did not look.
 * `vhost` is `/` but for its test, which cannot clean the shared broker's `/`.
 */
export async function removeStaleDefaultVhostQueues(
  root,
  mgmt,
  broker,
  env = process.env,
  { vhost = DEFAULT_VHOST } = {},
) {
  if (!broker?.vhost || broker.vhost === vhost) return null;
  const project = topologyQueueNames(root);
  let names;
  try {
    names = (await listQueues(mgmt, vhost)).filter((n) => project.has(n));
  } catch (err) {
    log.warn(
      `could not list the queues of vhost ${vhost} (${err.message}): a stale copy of the topology there is left as it is`,
    );
    return null;
  }
  if (!names.length) return { removed: 0, kept: [] };

  // Over AMQP, as the management API's admin (guest on a development broker), on that vhost.
  const { default: amqplib } = await import('amqplib');
  const amqp = target(env, 'AMQP_URL').url;
  const api = new URL(mgmt);
  const url = `${amqp.protocol}//${api.username}:${api.password}@${amqp.host}/${encodeURIComponent(vhost)}`;
  const conn = await amqplib.connect(url, {
    clientProperties: { connection_name: `npm start: stale queues in ${vhost}` },
  });
  conn.on('error', () => undefined);
  const kept = [];
  let removed = 0;
  try {
    for (const name of names) {
      // A channel per queue: a queue deleted meanwhile closes the channel (404), not the loop.
      const ch = await conn.createChannel();
      ch.on('error', () => undefined);
      try {
        const { messageCount, consumerCount } = await ch.checkQueue(name);
        if (messageCount === 0 && consumerCount === 0) {
          await ch.deleteQueue(name);
          removed++;
        } else {
          kept.push({ name, messages: messageCount, consumers: consumerCount });
        }
        await ch.close();
      } catch (err) {
        if (err?.code !== 404) throw err;
      }
    }
  } finally {
    await conn.close().catch(() => undefined);
  }
  if (removed)
    log.ok(
      `removed ${removed} empty queue(s) with no consumer from vhost ${vhost} (a stale copy of the project's topology; the apps use vhost ${broker.vhost})`,
    );
  if (kept.length) {
    const shown = kept
      .slice(0, 5)
      .map((q) => `${q.name} (${q.messages} messages, ${q.consumers} consumers)`)
      .join(', ');
    log.warn(
      `kept ${kept.length} queue(s) of the project's topology in vhost ${vhost} that hold messages or have consumers: ${shown}${kept.length > 5 ? ', …' : ''}. ` +
        `They are not the live queues (vhost ${broker.vhost}); look at them in the management UI (vhost ${vhost}) and delete them there as guest once nothing in them matters ` +
        `(${redact(mgmt)}).`,
    );
  }
  return { removed, kept };
}
