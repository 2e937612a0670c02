import { DEFAULT_DELIVERY_LIMIT, validateTopology } from '@community/messaging';
import { EVENT_TYPE_NAMES } from './events';
import {
  COMMUNITY_TOPOLOGY,
  EVENTS_EXCHANGE,
  NOTIFICATION_TYPE_HEADER,
  NOTIFICATIONS_BY_TYPE_EXCHANGE,
  QUEUES,
} from './topology';

it('is a valid topology for the messaging runtime', () => {
  expect(() => validateTopology(COMMUNITY_TOPOLOGY)).not.toThrow();
});

it('binds every event type of the contract to at least one queue (an unroutable event blocks its outbox)', () => {
  const bound = new Set(
    COMMUNITY_TOPOLOGY.queues.flatMap((q) =>
      q.bindings.filter((b) => b.exchange === EVENTS_EXCHANGE).flatMap((b) => b.routingKeys ?? []),
    ),
  );
  expect(EVENT_TYPE_NAMES.filter((type) => !bound.has(type))).toEqual([]);
});

it('keeps the broker names operators and tools know: community.dlx and community:<queue> policies', () => {
  expect(COMMUNITY_TOPOLOGY).toMatchObject({ deadLetterExchange: 'community.dlx', policyPrefix: 'community' });
});

it('gives every queue a delivery limit above the restart budget: a healthy message survives 20 consumer restarts', () => {
  for (const q of COMMUNITY_TOPOLOGY.queues) expect(q.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT).toBeGreaterThan(20);
});

it('sends the critical email lane only security alerts: notification.created through a headers exchange on notification-type', () => {
  const byType = COMMUNITY_TOPOLOGY.exchanges.find((x) => x.name === NOTIFICATIONS_BY_TYPE_EXCHANGE);
  expect(byType).toEqual({
    name: NOTIFICATIONS_BY_TYPE_EXCHANGE,
    type: 'headers',
    bindings: [{ exchange: EVENTS_EXCHANGE, routingKeys: ['notification.created'] }],
  });
  const critical = COMMUNITY_TOPOLOGY.queues.find((q) => q.name === 'email-service.send-critical');
  expect(critical?.bindings).toEqual([
    {
      exchange: NOTIFICATIONS_BY_TYPE_EXCHANGE,
      headers: { [NOTIFICATION_TYPE_HEADER]: 'security_alert' },
      match: 'all',
    },
  ]);
});

it('names every work queue once: QUEUES and the topology declare the same set', () => {
  expect(COMMUNITY_TOPOLOGY.queues.map((q) => q.name).sort()).toEqual(Object.values(QUEUES).sort());
});
