import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import {
  deadLetterProblems,
  DLQ_DELIVERY_LIMIT,
  effectiveSettings,
  planTopology,
  type BrokerFacts,
} from '@community/messaging';

/**
 * No queue relies on a broker default for its dead letters or its delivery limit (RabbitMQ 4.0 gives
 * a quorum queue without a limit one of 20, and a DLQ has no dead-letter exchange: past 20 a dead
 * letter would be dropped). Checked over every way the topology reaches a broker: the committed
 * definitions (compose import, the Kubernetes topology Job), the Messaging Topology Operator's
 * objects, and the plan the services themselves declare and whose policies they apply at run time
 * (`declare-all`: ensurePolicies with plan().policies). `npm run infra:generate` writes the files.
 */
const ROOT = path.resolve(__dirname, '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

interface DefinitionsFile {
  queues: Array<{ name: string; arguments: Record<string, unknown> }>;
  policies: Array<{
    name: string;
    pattern: string;
    'apply-to': string;
    priority: number;
    definition: Record<string, unknown>;
  }>;
  exchanges: Array<{ name: string }>;
  bindings: Array<{ source: string; destination: string; routing_key: string }>;
}

function fromDefinitions(file: string): BrokerFacts {
  const d = JSON.parse(read(file)) as DefinitionsFile;
  return {
    queues: d.queues,
    policies: d.policies.map((p) => ({
      name: p.name,
      pattern: p.pattern,
      applyTo: p['apply-to'],
      priority: p.priority,
      definition: p.definition,
    })),
    exchanges: d.exchanges.map((x) => x.name),
    bindings: d.bindings.map((b) => ({ source: b.source, destination: b.destination, routingKey: b.routing_key })),
  };
}

type Obj = { kind: string; spec: Record<string, unknown> & { name?: string } };
function fromOperator(file: string): BrokerFacts {
  const objects = parseAllDocuments(read(file))
    .map((d) => d.toJS() as Obj)
    .filter(Boolean);
  const of = (kind: string) => objects.filter((o) => o.kind === kind).map((o) => o.spec);
  return {
    queues: of('Queue').map((s) => ({
      name: String(s.name),
      arguments: { ...(s.arguments as Record<string, unknown>), 'x-queue-type': s.type },
    })),
    policies: of('Policy').map((s) => ({
      name: String(s.name),
      pattern: String(s.pattern),
      applyTo: String(s.applyTo),
      priority: Number(s.priority),
      definition: s.definition as Record<string, unknown>,
    })),
    exchanges: of('Exchange').map((s) => String(s.name)),
    bindings: of('Binding').map((s) => ({
      source: String(s.source),
      destination: String(s.destination),
      routingKey: String(s.routingKey ?? ''),
    })),
  };
}

function fromPlan(): BrokerFacts {
  const p = planTopology(COMMUNITY_TOPOLOGY);
  return {
    queues: p.queues,
    policies: p.policies,
    exchanges: p.exchanges.map((x) => x.name),
    bindings: p.bindings.map((b) => ({ source: b.exchange, destination: b.queue, routingKey: b.routingKey })),
  };
}

const sources: Array<[string, () => BrokerFacts]> = [
  ['infra/rabbitmq/definitions.json', () => fromDefinitions('infra/rabbitmq/definitions.json')],
  ['infra/k8s/base/topology/definitions.json', () => fromDefinitions('infra/k8s/base/topology/definitions.json')],
  ['infra/rabbitmq/operator/topology.yaml', () => fromOperator('infra/rabbitmq/operator/topology.yaml')],
  ['the run-time plan (declare-all: queues declared, policies applied by the services)', fromPlan],
];

describe.each(sources)('%s', (_name, load) => {
  const facts = load();
  const planned = fromPlan();

  it('has every queue of the plan, and no other', () => {
    expect(facts.queues.map((q) => q.name).sort()).toEqual(planned.queues.map((q) => q.name).sort());
  });

  it('gives every queue an explicit delivery limit and a sound dead-letter path (DLQs: none, and a limit nothing reaches)', () => {
    expect(deadLetterProblems(facts)).toEqual([]);
  });

  it('says what each role gets, explicitly', () => {
    const table = new Map<string, Set<string>>();
    for (const q of facts.queues) {
      const s = effectiveSettings(q, facts.policies);
      const role = q.name.endsWith('.dlq') ? 'dlq' : q.name.includes('.retry.') ? 'retry' : 'work';
      const dlx =
        s.deadLetterExchange === undefined
          ? 'none'
          : s.deadLetterExchange === ''
            ? '(default exchange)'
            : s.deadLetterExchange;
      const limit =
        role === 'dlq'
          ? String(s.deliveryLimit)
          : typeof s.deliveryLimit === 'number' && s.deliveryLimit >= 20
            ? '>= 20'
            : String(s.deliveryLimit);
      table.set(role, (table.get(role) ?? new Set()).add(`dead-letter ${dlx}, delivery-limit ${limit}`));
    }
    expect(Object.fromEntries([...table].map(([k, v]) => [k, [...v]]))).toEqual({
      work: ['dead-letter community.dlx, delivery-limit >= 20'],
      retry: ['dead-letter (default exchange), delivery-limit >= 20'],
      dlq: [`dead-letter none, delivery-limit ${DLQ_DELIVERY_LIMIT}`],
    });
  });
});
