import amqplib, { type ChannelModel, type SocketOptions } from 'amqplib';

/**
 * AMQP_URL may name every node of a cluster, comma-separated, for a deployment without a load
 * balancer in front of the broker (docs/MESSAGING.md "Endpoints"):
 *
 *   amqp://user:pass@rabbit-0:5672/community,amqp://user:pass@rabbit-1:5672/community
 *
 * All name the same user and vhost (the nodes of one cluster); the first one's user, vhost and host
 * are the ones the management API and the broker identity are derived from.
 */
export function amqpUrls(value: string): string[] {
  const urls = value
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
  if (urls.length === 0) throw new Error('AMQP_URL names no broker');
  return urls;
}

/** The first URL of the list: the one user, vhost and management host are read from. */
export function primaryAmqpUrl(value: string): string {
  return amqpUrls(value)[0];
}

/**
 * The list in the order this process tries it: rotated by a random offset, so the replicas of a
 * service spread their connections over the nodes instead of all landing on the first one.
 */
export function connectionOrder(value: string, random: () => number = Math.random): string[] {
  const urls = amqpUrls(value);
  const start = Math.floor(random() * urls.length) % urls.length;
  return [...urls.slice(start), ...urls.slice(0, start)];
}

/** For a plain amqplib connection (no manager): the first node that answers, in connection order. */
export async function connectToAny(value: string, socketOptions?: SocketOptions): Promise<ChannelModel> {
  let last: unknown;
  for (const url of connectionOrder(value)) {
    try {
      return await amqplib.connect(url, socketOptions);
    } catch (err) {
      last = err;
    }
  }
  throw last;
}
