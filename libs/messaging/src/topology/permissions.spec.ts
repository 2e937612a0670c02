import { accessProblems, exactly, permissionsFor, type ServiceAccess } from './permissions';
import { plan } from './plan';
import type { Topology } from './types';

const topology: Topology = {
  exchanges: [{ name: 'ev', type: 'topic' }],
  queues: [
    { name: 'a.work', bindings: [{ exchange: 'ev', routingKeys: ['x.created', 'y.*'] }], retryDelaysMs: [1000] },
    { name: 'b.work', bindings: [{ exchange: 'ev', routingKeys: ['z.done'] }], retryDelaysMs: [] },
  ],
};
const p = plan(topology);
const a: ServiceAccess = {
  user: 'a',
  consumes: ['a.work'],
  publishes: [{ exchange: 'ev', routingKeys: ['z.done'] }],
  sendsTo: [],
  reads: [],
  tags: ['management'],
};

describe('permissionsFor', () => {
  it('configures only its own queue group, never an exchange', () => {
    const perms = permissionsFor(topology, p, a);
    expect(perms.configure).toBe(exactly(['a.work', 'a.work.retry.1s', 'a.work.dlq']));
    for (const name of ['a.work', 'a.work.retry.1s', 'a.work.dlq'])
      expect(new RegExp(perms.configure).test(name)).toBe(true);
    for (const name of ['b.work', 'a.work.dlqx', 'ev', 'dlx', 'a-work'])
      expect(new RegExp(perms.configure).test(name)).toBe(false);
  });

  it('writes its queues, the exchanges it publishes to and its group’s own exchange (retry copies), never the default exchange; reads its queues and its bindings’ exchanges', () => {
    const perms = permissionsFor(topology, p, a);
    expect(perms.write).toBe(exactly(['a.work', 'a.work.retry.1s', 'a.work.dlq', 'ev', 'a.work.direct']));
    expect(new RegExp(perms.write).test('amq.default')).toBe(false);
    expect(new RegExp(perms.write).test('b.work.direct')).toBe(false);
    expect(perms.read).toBe(exactly(['a.work', 'a.work.retry.1s', 'a.work.dlq', 'ev', 'dlx', 'a.work.direct']));
  });

  it('writes the own exchange of each queue it sends to by name', () => {
    const perms = permissionsFor(topology, p, { ...a, consumes: [], sendsTo: ['b.work'] });
    expect(perms.write).toBe(exactly(['ev', 'b.work.direct']));
  });

  it('limits routing keys on topic exchanges: publishes only its keys, binds only its own binding keys (literally)', () => {
    const [topic] = permissionsFor(topology, p, a).topic;
    expect(topic).toEqual({ exchange: 'ev', write: '^(z\\.done)$', read: '^(x\\.created|y\\.\\*)$' });
    expect(new RegExp(topic.read).test('y.anything')).toBe(false);
  });

  it('a pure publisher configures and reads nothing, and does not write to the default exchange', () => {
    const perms = permissionsFor(topology, p, { ...a, consumes: [] });
    expect(perms).toMatchObject({ configure: '^$', read: '^$', write: '^(ev)$' });
  });
});

describe('accessProblems', () => {
  it('names queues and exchanges the topology lacks, and a queue with two owners', () => {
    expect(
      accessProblems(topology, p, [
        a,
        {
          ...a,
          user: 'c',
          consumes: ['a.work', 'nope'],
          reads: ['b.work.dlq', 'c.dlq'],
          publishes: [{ exchange: 'ev2', routingKeys: [] }],
        },
      ]),
    ).toEqual([
      'c: consumes "a.work", already owned by a',
      'c: consumes "nope", which is not a work queue of the topology',
      'c: names queue "c.dlq", which the topology does not derive',
      'c: publishes to "ev2", which is not an exchange of the topology',
    ]);
  });

  it('keeps the topology’s producers and the services’ routing keys in step', () => {
    const withProducers: Topology = { ...topology, producers: { 'z.done': ['b'], 'x.created': ['a'] } };
    expect(accessProblems(withProducers, p, [a])).toEqual([
      'a: publishes "z.done", but topology.producers does not name it as a producer of that type',
      'topology.producers["z.done"]: "b" has no broker access',
      'topology.producers["x.created"]: "a" may not publish that routing key',
    ]);
  });
});
