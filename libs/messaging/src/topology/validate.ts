import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler, ValueErrorType } from '@sinclair/typebox/compiler';
import { queueExchangeName } from './names';
import type { BindingSpec, Topology } from './types';

/**
 * Refuses a topology before anything touches the broker: unknown keys, wrong types, dangling
 * references and duplicate names are reported together, each naming its culprit.
 */
export class TopologyError extends Error {
  override readonly name = 'TopologyError';
  constructor(readonly problems: string[]) {
    super(`invalid topology:\n  - ${problems.join('\n  - ')}`);
  }
}

const Name = Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:-]+$' });
const Delay = Type.Integer({ minimum: 1, maximum: 24 * 3_600_000 });

const Binding = Type.Object(
  {
    exchange: Name,
    routingKeys: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    headers: Type.Optional(
      Type.Record(Type.String({ minLength: 1 }), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
    ),
    match: Type.Optional(Type.Union([Type.Literal('all'), Type.Literal('any')])),
  },
  { additionalProperties: false },
);

const TopologySchema = Type.Object(
  {
    exchanges: Type.Array(
      Type.Object(
        {
          name: Name,
          type: Type.Union(['topic', 'direct', 'fanout', 'headers', 'x-consistent-hash'].map((t) => Type.Literal(t))),
          bindings: Type.Optional(Type.Array(Binding)),
        },
        { additionalProperties: false },
      ),
    ),
    queues: Type.Array(
      Type.Object(
        {
          name: Name,
          bindings: Type.Array(Binding),
          retryDelaysMs: Type.Array(Delay, { maxItems: 20 }),
          deliveryLimit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
          maxLength: Type.Optional(Type.Integer({ minimum: 1 })),
          singleActiveConsumer: Type.Optional(Type.Boolean()),
        },
        { additionalProperties: false },
      ),
    ),
    deadLetterExchange: Type.Optional(Name),
    policyPrefix: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9._-]+$' })),
    producers: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 })))),
    replayers: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  },
  { additionalProperties: false },
);
const checker = TypeCompiler.Compile(TopologySchema);

/** Where an error path points, e.g. `/queues/2/retryDelay` → `queues[2] ("email-service.send")`. */
function describePath(raw: unknown, path: string): string {
  const parts = path.split('/').filter(Boolean);
  let node: unknown = raw;
  let label = 'topology';
  for (const part of parts) {
    node = (node as Record<string, unknown> | undefined)?.[part];
    const isIndex = /^\d+$/.test(part);
    label += isIndex ? `[${part}]` : `.${part}`;
    const name = (node as { name?: unknown } | undefined)?.name;
    if (isIndex && typeof name === 'string') label += ` ("${name}")`;
  }
  return label;
}

export function validateTopology(raw: unknown): Topology {
  const problems: string[] = [];
  for (const e of checker.Errors(raw)) {
    if (e.type === ValueErrorType.ObjectAdditionalProperties) {
      // TypeBox points at the unknown key itself: report it against the object that holds it.
      const parent = e.path.slice(0, e.path.lastIndexOf('/'));
      problems.push(`${describePath(raw, parent)}: unknown key "${e.path.slice(parent.length + 1)}"`);
      continue;
    }
    problems.push(`${describePath(raw, e.path)}: ${e.message}`);
  }
  if (problems.length > 0) throw new TopologyError([...new Set(problems)]);

  const topology = raw as Static<typeof TopologySchema> as Topology;
  const seen = new Map<string, string>();
  const claim = (name: string, what: string) => {
    const previous = seen.get(name);
    if (previous) problems.push(`duplicate name "${name}" (${what}, already used by ${previous})`);
    else seen.set(name, what);
  };
  const exchanges = new Map(topology.exchanges.map((x) => [x.name, x.type]));
  topology.exchanges.forEach((x, i) => claim(x.name, `exchanges[${i}]`));
  /** A binding names a declared source, and routes by keys or by headers as the source's type allows. */
  const checkBinding = (where: string, b: BindingSpec) => {
    const type = exchanges.get(b.exchange);
    if (type === undefined) {
      problems.push(`${where}: exchange "${b.exchange}" is not declared`);
      return;
    }
    if ((b.routingKeys === undefined) === (b.headers === undefined)) {
      problems.push(`${where}: give either routingKeys or headers (exactly one)`);
    } else if (b.headers !== undefined && type !== 'headers') {
      problems.push(`${where}: headers bind only to a headers exchange ("${b.exchange}" is ${type})`);
    } else if (b.headers !== undefined && Object.keys(b.headers).some((k) => k.startsWith('x-'))) {
      // RabbitMQ ignores header arguments starting with x- when matching (x-match is its own).
      problems.push(
        `${where}: header names starting with "x-" are ignored by RabbitMQ's headers exchange when matching`,
      );
    } else if (b.routingKeys !== undefined && type === 'headers') {
      problems.push(`${where}: a headers exchange ("${b.exchange}") routes by headers, not routingKeys`);
    } else if (b.match !== undefined && b.headers === undefined) {
      problems.push(`${where}: match applies to headers bindings only`);
    }
  };
  topology.exchanges.forEach((x, i) => {
    (x.bindings ?? []).forEach((b, j) => {
      const where = `exchanges[${i}] ("${x.name}").bindings[${j}]`;
      if (b.exchange === x.name) problems.push(`${where}: an exchange cannot be bound to itself`);
      else checkBinding(where, b);
    });
  });
  if (topology.deadLetterExchange !== undefined) claim(topology.deadLetterExchange, 'deadLetterExchange');
  topology.queues.forEach((q, i) => {
    const duplicate = seen.has(q.name);
    claim(q.name, `queues[${i}]`);
    // Its group's exchange (plan()): a declared exchange of that name would be a second one.
    if (!duplicate) claim(queueExchangeName(q.name), `the exchange of queues[${i}] ("${q.name}")`);
    if (q.name.endsWith('.dlq') || /\.retry\./.test(q.name)) {
      problems.push(`queues[${i}] ("${q.name}"): names ending in .dlq or containing .retry. are derived, not declared`);
    }
    q.bindings.forEach((b, j) => checkBinding(`queues[${i}] ("${q.name}").bindings[${j}]`, b));
    const delays = new Set<number>();
    q.retryDelaysMs.forEach((d) => {
      if (delays.has(d)) problems.push(`queues[${i}] ("${q.name}").retryDelaysMs: delay ${d} appears twice`);
      delays.add(d);
    });
  });
  if (problems.length > 0) throw new TopologyError(problems);
  return topology;
}

/** Checked by the consumer and publisher so a typo fails at start, not as a channel error later. */
export function assertQueueDeclared(topology: Topology, queue: string): void {
  if (!topology.queues.some((q) => q.name === queue)) {
    throw new TopologyError([`queue "${queue}" is not declared in the topology`]);
  }
}

export function assertExchangeDeclared(topology: Topology, exchange: string): void {
  if (exchange !== '' && !topology.exchanges.some((x) => x.name === exchange)) {
    throw new TopologyError([`exchange "${exchange}" is not declared in the topology`]);
  }
}
