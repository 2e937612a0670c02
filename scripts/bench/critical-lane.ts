/**
 * How much of notification.created reaches the critical email lane (email-service.send-critical):
 * 1,000 mixed notifications (every notification type in turn, so 1 in NOTIFICATION_TYPES.length is
 * a security alert) published as notification-service publishes them (with the notification-type
 * header), on two private vhosts in the same run: the baseline, where the lane was bound to
 * notification.created by routing key (before the headers exchange), and COMMUNITY_TOPOLOGY now.
 * Prints the messages each lane received; nothing consumes them.
 *
 *   npm run bench:critical-lane            (BENCH_NOTIFICATIONS=1000 by default)
 */
import pino from 'pino';
import { Registry } from 'prom-client';
import {
  buildEvent,
  COMMUNITY_TOPOLOGY,
  EVENTS_EXCHANGE,
  NOTIFICATION_TYPES,
  notificationHeaders,
} from '@community/contracts';
import { createMessaging, type Topology } from '@community/messaging';
import { createTestVhost, eventually } from '@community/testing';

const N = Number(process.env.BENCH_NOTIFICATIONS ?? 1000);
const LANE = 'email-service.send-critical';
const REGULAR = 'email-service.send';

/** The lane as it was: a second queue on the routing key, receiving every notification.created. */
const BASELINE: Topology = {
  ...COMMUNITY_TOPOLOGY,
  queues: COMMUNITY_TOPOLOGY.queues.map((q) =>
    q.name === LANE ? { ...q, bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['notification.created'] }] } : q,
  ),
};

async function run(label: string, topology: Topology): Promise<{ lane: number; regular: number; security: number }> {
  const vhost = await createTestVhost(`bench-lane-${label}`);
  const producer = createMessaging({
    url: vhost.url,
    service: 'bench-producer',
    topology,
    logger: pino({ level: 'warn' }),
    registry: new Registry(),
    classifiers: [],
    defaultExchange: EVENTS_EXCHANGE,
  });
  try {
    await producer.start();
    let security = 0;
    await Promise.all(
      Array.from({ length: N }, (_, i) => {
        const type = NOTIFICATION_TYPES[i % NOTIFICATION_TYPES.length];
        if (type === 'security_alert') security++;
        const data = {
          notificationId: `n-${i}`,
          userId: `u-${i % 50}`,
          type,
          idempotencyKey: `${type}:r-${i}`,
          actorId: 'u-7',
          resourceType: 'comment',
          resourceId: `r-${i}`,
          emailChannel: 'immediate' as const,
          excerpt: 'x',
        };
        const event = buildEvent('notification.created', data, { producer: 'bench' });
        const headers = notificationHeaders(event);
        return producer.publisher.publish(event, headers ? { headers } : {});
      }),
    );
    await eventually(`${N} on ${REGULAR}`, async () => (await vhost.ready(REGULAR)) === N, 30_000);
    return { lane: await vhost.ready(LANE), regular: await vhost.ready(REGULAR), security };
  } finally {
    await producer.stop(1000);
    await vhost.delete();
  }
}

async function main(): Promise<void> {
  const before = await run('baseline', BASELINE);
  const after = await run('now', COMMUNITY_TOPOLOGY);
  console.log(`notifications published: ${N} (${after.security} security alerts)`);
  console.log(
    `${LANE} received — baseline (routing-key binding): ${before.lane}; now (headers exchange): ${after.lane}`,
  );
  console.log(`${REGULAR} received — baseline: ${before.regular}; now: ${after.regular}`);
  if (after.lane !== after.security)
    throw new Error(`the lane received ${after.lane}, expected only the ${after.security} security alerts`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
