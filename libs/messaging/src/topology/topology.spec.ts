import { DLQ_DELIVERY_LIMIT, plan } from './plan';
import { TopologyError, validateTopology } from './validate';

const valid = () => ({
  exchanges: [{ name: 'community.events', type: 'topic' }],
  queues: [
    {
      name: 'svc.work',
      bindings: [{ exchange: 'community.events', routingKeys: ['user.mentioned'] }],
      retryDelaysMs: [1000, 5000],
    },
  ],
});

function problemsOf(raw: unknown): string[] {
  try {
    validateTopology(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(TopologyError);
    return (err as TopologyError).problems;
  }
  throw new Error('expected the topology to be refused');
}

describe('validateTopology', () => {
  it('accepts a valid topology', () => {
    expect(validateTopology(valid())).toEqual(valid());
  });

  it('names an unknown key and the queue it is in', () => {
    const t = valid();
    (t.queues[0] as Record<string, unknown>).retryDelay = [1];
    expect(problemsOf(t)).toEqual(['topology.queues[0] ("svc.work"): unknown key "retryDelay"']);
  });

  it('names a binding to an undeclared exchange', () => {
    const t = valid();
    t.queues[0].bindings[0].exchange = 'community.event';
    expect(problemsOf(t)).toEqual(['queues[0] ("svc.work").bindings[0]: exchange "community.event" is not declared']);
  });

  it('names duplicate queue names', () => {
    const t = valid();
    t.queues.push({ ...t.queues[0] });
    expect(problemsOf(t)).toEqual(['duplicate name "svc.work" (queues[1], already used by queues[0])']);
  });

  it('refuses wrong types and reports every problem at once', () => {
    const t = valid() as unknown as { exchanges: Array<{ type: string }>; queues: Array<{ retryDelaysMs: unknown }> };
    t.exchanges[0].type = 'fan-out';
    t.queues[0].retryDelaysMs = [-5];
    const problems = problemsOf(t);
    expect(problems.some((p) => p.startsWith('topology.exchanges[0] ("community.events").type'))).toBe(true);
    expect(problems.some((p) => p.startsWith('topology.queues[0] ("svc.work").retryDelaysMs[0]'))).toBe(true);
  });

  it('refuses declaring a derived name', () => {
    const t = valid();
    t.queues[0].name = 'svc.work.dlq';
    expect(problemsOf(t)[0]).toMatch(/derived, not declared/);
  });
});

describe('plan', () => {
  it('derives retry tiers that return to their own queue, a DLQ, and a policy', () => {
    const p = plan(validateTopology(valid()));
    expect(p.queues.map((q) => q.name)).toEqual(['svc.work', 'svc.work.retry.1s', 'svc.work.retry.5s', 'svc.work.dlq']);
    const retry = p.queues.find((q) => q.name === 'svc.work.retry.5s')!;
    expect(retry.arguments).toMatchObject({
      'x-message-ttl': 5000,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': 'svc.work',
    });
    expect(p.queues.every((q) => q.arguments['x-queue-type'] === 'quorum' && !('x-expires' in q.arguments))).toBe(true);
    expect(p.policies).toEqual([
      expect.objectContaining({
        pattern: '^svc\\.work$',
        definition: expect.objectContaining({ overflow: 'drop-head', 'delivery-limit': 50 }),
      }),
      // Explicit limits for the tiers and the DLQ too: RabbitMQ 4.x would give them 20.
      {
        name: 'messaging:svc.work.retry',
        pattern: '^svc\\.work\\.retry\\.[^.]+$',
        applyTo: 'queues',
        priority: 10,
        definition: { 'delivery-limit': 50, 'queue-leader-locator': 'balanced' },
      },
      {
        name: 'messaging:svc.work.dlq',
        pattern: '^svc\\.work\\.dlq$',
        applyTo: 'queues',
        priority: 10,
        definition: { 'delivery-limit': DLQ_DELIVERY_LIMIT, 'queue-leader-locator': 'balanced' },
      },
    ]);
    // Leader placement in every policy: a queue takes one policy's keys, so each must carry it.
    expect(p.policies.every((x) => x.definition['queue-leader-locator'] === 'balanced')).toBe(true);
    expect(p.policies[0].name).toBe('messaging:svc.work');
    expect(p.bindings).toContainEqual({ exchange: 'dlx', queue: 'svc.work.dlq', routingKey: 'svc.work' });
  });

  it('names the dead-letter exchange and the policies as the topology says', () => {
    const p = plan(validateTopology({ ...valid(), deadLetterExchange: 'svc.dlx', policyPrefix: 'svc' }));
    expect(p.exchanges).toContainEqual({ name: 'svc.dlx', type: 'direct' });
    expect(p.policies[0]).toMatchObject({
      name: 'svc:svc.work',
      definition: expect.objectContaining({ 'dead-letter-exchange': 'svc.dlx' }),
    });
    expect(p.bindings).toContainEqual({ exchange: 'svc.dlx', queue: 'svc.work.dlq', routingKey: 'svc.work' });
  });

  it('refuses a dead-letter exchange that is also declared as an exchange', () => {
    expect(problemsOf({ ...valid(), deadLetterExchange: 'community.events' })).toEqual([
      'duplicate name "community.events" (deadLetterExchange, already used by exchanges[0])',
    ]);
  });
});

describe('exchange-to-exchange and headers bindings', () => {
  const routed = () => ({
    exchanges: [
      { name: 'events', type: 'topic' },
      { name: 'by-kind', type: 'headers', bindings: [{ exchange: 'events', routingKeys: ['thing.created'] }] },
    ],
    queues: [
      { name: 'svc.all', bindings: [{ exchange: 'events', routingKeys: ['thing.created'] }], retryDelaysMs: [] },
      {
        name: 'svc.urgent',
        bindings: [{ exchange: 'by-kind', headers: { kind: 'urgent', level: 2 }, match: 'all' }],
        retryDelaysMs: [],
      },
    ],
  });

  it('gives each work queue group a direct exchange of its own, bound to the queue, its tiers and its DLQ by their names', () => {
    const p = plan(validateTopology(valid()));
    expect(p.exchanges).toContainEqual({ name: 'svc.work.direct', type: 'direct' });
    const own = p.bindings.filter((b) => b.exchange === 'svc.work.direct');
    const group = p.queues.map((q) => q.name);
    expect(own.map((b) => b.queue).sort()).toEqual(group.sort());
    for (const b of own) expect(b.routingKey).toBe(b.queue);
  });

  it('refuses a declared exchange with the name of a queue group’s own exchange', () => {
    const t = valid();
    t.exchanges.push({ name: 'svc.work.direct', type: 'direct' });
    expect(problemsOf(t)).toEqual([expect.stringContaining('duplicate name "svc.work.direct"')]);
  });

  it('plans exchange.bind per routing key and one header binding with x-match', () => {
    const p = plan(validateTopology(routed()));
    expect(p.exchanges).toEqual([
      { name: 'events', type: 'topic' },
      { name: 'by-kind', type: 'headers' },
      { name: 'dlx', type: 'direct' },
      { name: 'svc.all.direct', type: 'direct' },
      { name: 'svc.urgent.direct', type: 'direct' },
    ]);
    expect(p.exchangeBindings).toEqual([{ source: 'events', destination: 'by-kind', routingKey: 'thing.created' }]);
    expect(p.bindings).toContainEqual({
      exchange: 'by-kind',
      queue: 'svc.urgent',
      routingKey: '',
      arguments: { 'x-match': 'all', kind: 'urgent', level: 2 },
    });
    expect(p.bindings).toContainEqual({ exchange: 'events', queue: 'svc.all', routingKey: 'thing.created' });
  });

  it('defaults match to all', () => {
    const t = routed();
    delete (t.queues[1].bindings[0] as { match?: string }).match;
    expect(plan(validateTopology(t)).bindings).toContainEqual(
      expect.objectContaining({ queue: 'svc.urgent', arguments: { 'x-match': 'all', kind: 'urgent', level: 2 } }),
    );
  });

  it.each([
    [
      'both keys and headers',
      (t: ReturnType<typeof routed>) => Object.assign(t.queues[1].bindings[0], { routingKeys: ['a'] }),
      'queues[1] ("svc.urgent").bindings[0]: give either routingKeys or headers (exactly one)',
    ],
    [
      'headers on a topic exchange',
      (t: ReturnType<typeof routed>) => Object.assign(t.queues[1].bindings[0], { exchange: 'events' }),
      'queues[1] ("svc.urgent").bindings[0]: headers bind only to a headers exchange ("events" is topic)',
    ],
    [
      'routing keys on a headers exchange',
      (t: ReturnType<typeof routed>) => Object.assign(t.queues[0].bindings[0], { exchange: 'by-kind' }),
      'queues[0] ("svc.all").bindings[0]: a headers exchange ("by-kind") routes by headers, not routingKeys',
    ],
    [
      'an x- header (ignored by the broker when matching)',
      (t: ReturnType<typeof routed>) => Object.assign(t.queues[1].bindings[0], { headers: { 'x-kind': 'urgent' } }),
      'queues[1] ("svc.urgent").bindings[0]: header names starting with "x-" are ignored by RabbitMQ\'s headers exchange when matching',
    ],
    [
      'an exchange bound to an undeclared source',
      (t: ReturnType<typeof routed>) => Object.assign(t.exchanges[1].bindings![0], { exchange: 'nowhere' }),
      'exchanges[1] ("by-kind").bindings[0]: exchange "nowhere" is not declared',
    ],
    [
      'an exchange bound to itself',
      (t: ReturnType<typeof routed>) => Object.assign(t.exchanges[1].bindings![0], { exchange: 'by-kind' }),
      'exchanges[1] ("by-kind").bindings[0]: an exchange cannot be bound to itself',
    ],
  ])('refuses %s', (_name, mutate, problem) => {
    const t = routed();
    mutate(t);
    expect(problemsOf(t)).toEqual([problem]);
  });
});
