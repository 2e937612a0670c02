import { deadLetterProblems, effectiveSettings, type BrokerFacts } from './effective';
import { DLQ_DELIVERY_LIMIT, plan } from './plan';
import { validateTopology } from './validate';

const topology = validateTopology({
  exchanges: [{ name: 'events', type: 'topic' }],
  queues: [
    {
      name: 'svc.work',
      bindings: [{ exchange: 'events', routingKeys: ['thing.created'] }],
      retryDelaysMs: [1000, 300_000],
      deliveryLimit: 80,
    },
    { name: 'svc.once', bindings: [{ exchange: 'events', routingKeys: ['thing.deleted'] }], retryDelaysMs: [] },
  ],
});

/** The plan as the broker sees it: what declareTopology declares and ensurePolicies applies. */
function facts(): BrokerFacts {
  const p = plan(topology);
  return {
    queues: p.queues,
    policies: p.policies,
    exchanges: p.exchanges.map((x) => x.name),
    bindings: p.bindings.map((b) => ({ source: b.exchange, destination: b.queue, routingKey: b.routingKey })),
  };
}

describe('every planned queue has explicit dead-letter settings and delivery limit', () => {
  it('by role: work queue → its DLQ, a tier → its work queue, a DLQ → nowhere with DLQ_DELIVERY_LIMIT', () => {
    const f = facts();
    const of = (name: string) =>
      effectiveSettings(f.queues.find((q) => q.name === name) ?? { name, arguments: {} }, f.policies);
    expect(of('svc.work')).toEqual({
      policies: ['messaging:svc.work'],
      deadLetterExchange: 'dlx',
      deadLetterRoutingKey: 'svc.work',
      deliveryLimit: 80,
    });
    expect(of('svc.work.retry.5m')).toEqual({
      policies: ['messaging:svc.work.retry'],
      deadLetterExchange: '',
      deadLetterRoutingKey: 'svc.work',
      deliveryLimit: 80,
    });
    expect(of('svc.work.dlq')).toEqual({ policies: ['messaging:svc.work.dlq'], deliveryLimit: DLQ_DELIVERY_LIMIT });
    expect(of('svc.once.dlq')).toEqual({ policies: ['messaging:svc.once.dlq'], deliveryLimit: DLQ_DELIVERY_LIMIT });
    expect(deadLetterProblems(f)).toEqual([]);
  });

  it('names a queue that would rely on a broker default, a DLQ that would drop, a broken dead-letter path', () => {
    const f = facts();
    const policies = f.policies
      .filter((p) => p.name !== 'messaging:svc.work.retry')
      .map((p) => (p.name === 'messaging:svc.once.dlq' ? { ...p, definition: { 'delivery-limit': 20 } } : p))
      .map((p) =>
        p.name === 'messaging:svc.work.dlq'
          ? { ...p, definition: { ...p.definition, 'dead-letter-exchange': 'dlx' } }
          : p,
      );
    const bindings = f.bindings.filter((b) => !(b.source === 'dlx' && b.destination === 'svc.once.dlq'));
    expect(deadLetterProblems({ ...f, policies, bindings })).toEqual([
      'svc.work.retry.1s: no policy applies',
      'svc.work.retry.1s: no explicit delivery limit (RabbitMQ 4.x would apply 20)',
      'svc.work.retry.5m: no policy applies',
      'svc.work.retry.5m: no explicit delivery limit (RabbitMQ 4.x would apply 20)',
      'svc.work.dlq: a DLQ must not dead-letter (it does to "dlx")',
      'svc.once: its dead letters (exchange "dlx", key "svc.once") do not reach "svc.once.dlq"',
      `svc.once.dlq: delivery limit 20 is below DLQ_DELIVERY_LIMIT (${DLQ_DELIVERY_LIMIT}): past it a dead letter is dropped`,
    ]);
  });

  it('follows the broker: the highest priority wins, a tie is reported, an argument beats a policy', () => {
    const q = { name: 'a.b', arguments: { 'x-queue-type': 'quorum', 'x-dead-letter-exchange': 'from-arg' } };
    const low = {
      name: 'low',
      pattern: '^a',
      applyTo: 'queues',
      priority: 1,
      definition: { 'delivery-limit': 5, 'dead-letter-exchange': 'low' },
    };
    const high = {
      name: 'high',
      pattern: '^a\\.b$',
      applyTo: 'queues',
      priority: 9,
      definition: { 'delivery-limit': 7, 'dead-letter-exchange': 'high' },
    };
    expect(effectiveSettings(q, [low, high])).toEqual({
      policies: ['high'],
      deadLetterExchange: 'from-arg',
      deliveryLimit: 7,
    });
    expect(effectiveSettings(q, [low, { ...high, priority: 1 }]).policies).toEqual(['low', 'high']);
    expect(effectiveSettings(q, [{ ...high, applyTo: 'exchanges' }])).toEqual({
      policies: [],
      deadLetterExchange: 'from-arg',
    });
  });
});
