import { EVENT_TYPE_NAMES } from '@community/contracts';
import { COMMUNITY_TOPOLOGY } from './community-topology';

it('binds every event type of the contract to at least one queue (an unroutable event blocks its outbox)', () => {
  const bound = new Set(COMMUNITY_TOPOLOGY.queues.flatMap((q) => q.bindings.flatMap((b) => b.routingKeys)));
  expect(EVENT_TYPE_NAMES.filter((type) => !bound.has(type))).toEqual([]);
});
