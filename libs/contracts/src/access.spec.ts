import { accessProblems, planTopology } from '@community/messaging';
import { SERVICE_ACCESS } from './access';
import { COMMUNITY_TOPOLOGY, EVENTS_EXCHANGE } from './topology';

it('names only queues and exchanges of the topology, each work queue with one owner', () => {
  expect(accessProblems(COMMUNITY_TOPOLOGY, planTopology(COMMUNITY_TOPOLOGY), SERVICE_ACCESS)).toEqual([]);
});

it('gives every work queue a consumer (a queue nobody may consume only grows)', () => {
  const consumed = new Set(SERVICE_ACCESS.flatMap((a) => a.consumes));
  expect(COMMUNITY_TOPOLOGY.queues.map((q) => q.name).filter((q) => !consumed.has(q))).toEqual([]);
});

it('lets some service publish every routing key a queue is bound to (else the binding waits for nothing)', () => {
  const published = new Set(
    SERVICE_ACCESS.flatMap((a) =>
      a.publishes.filter((p) => p.exchange === EVENTS_EXCHANGE).flatMap((p) => p.routingKeys),
    ),
  );
  const bound = COMMUNITY_TOPOLOGY.queues.flatMap((q) => q.bindings.flatMap((b) => b.routingKeys ?? []));
  expect(bound.filter((k) => !published.has(k))).toEqual([]);
});
