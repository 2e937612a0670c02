// The generated definitions imported into the real local broker (3.10): what the broker itself
// reports for each queue (its arguments and `effective_policy_definition`), with its bindings and
// exchanges, gives every queue an explicit delivery limit and a sound dead-letter path. The spec
// (src/queue-safety.spec.ts) reads the files; this shows the broker applies them as read.
import {
  escapeRegex,
  deadLetterProblems,
  DLQ_DELIVERY_LIMIT,
  managementRequest,
  QUEUE_LEADER_LOCATOR,
  type BrokerFacts,
} from '@community/messaging';
import { createTestVhost, eventually, type TestVhost } from '@community/testing';
import { buildDefinitions } from '../src';

let vhost: TestVhost;

beforeAll(async () => {
  vhost = await createTestVhost('infra-qsafety');
  // The topology only: the users and their permissions are rabbitmq-definitions.test.ts's subject.
  const defs = buildDefinitions({ vhost: vhost.vhost });
  const topology = {
    vhosts: defs.vhosts,
    queues: defs.queues,
    exchanges: defs.exchanges,
    bindings: defs.bindings,
    policies: defs.policies,
  };
  const res = await managementRequest(vhost.management, 'POST', '/definitions', topology);
  if (!res.ok) throw new Error(`definitions import: HTTP ${res.status} ${await res.text()}`);
});

afterAll(async () => vhost?.delete());

async function get<T>(path: string): Promise<T> {
  const res = await managementRequest(vhost.management, 'GET', path);
  if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

type QueueRow = {
  name: string;
  arguments: Record<string, unknown>;
  policy?: string;
  effective_policy_definition?: Record<string, unknown>;
};

it('every queue, as the broker reports it, has an explicit delivery limit and a sound dead-letter path', async () => {
  const v = encodeURIComponent(vhost.vhost);
  const expected = buildDefinitions({ vhost: vhost.vhost }).queues.length;
  // The broker reports a queue's effective policy with its statistics, every few seconds.
  const queues = await eventually(
    'the broker reports every queue with its policy',
    async () => {
      const rows = await get<QueueRow[]>(`/queues/${v}?columns=name,arguments,policy,effective_policy_definition`);
      const reported = rows.flatMap((r) =>
        r.effective_policy_definition !== undefined && r.policy
          ? [{ ...r, effective: r.effective_policy_definition }]
          : [],
      );
      return reported.length === expected ? reported : undefined;
    },
    60_000,
    500,
  );
  const facts: BrokerFacts = {
    queues: queues.map((q) => ({ name: q.name, arguments: q.arguments })),
    // The policy the broker says is in force for each queue, as if it were the only one.
    policies: queues.map((q) => ({
      name: String(q.policy),
      pattern: `^${escapeRegex(q.name)}$`,
      applyTo: 'queues',
      priority: 0,
      definition: q.effective,
    })),
    exchanges: (await get<Array<{ name: string }>>(`/exchanges/${v}`)).map((x) => x.name),
    bindings: (await get<Array<{ source: string; destination: string; routing_key: string }>>(`/bindings/${v}`)).map(
      (b) => ({ source: b.source, destination: b.destination, routingKey: b.routing_key }),
    ),
  };
  expect(deadLetterProblems(facts)).toEqual([]);
  const dlqs = queues.filter((q) => q.name.endsWith('.dlq'));
  expect(dlqs.length).toBeGreaterThan(0);
  for (const q of dlqs)
    expect([q.name, q.effective_policy_definition]).toEqual([
      q.name,
      { 'delivery-limit': DLQ_DELIVERY_LIMIT, 'queue-leader-locator': QUEUE_LEADER_LOCATOR },
    ]);
});
