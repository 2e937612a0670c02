import { stringify } from 'yaml';
import type { Topology } from '@community/messaging';
import { COMMUNITY_VHOST } from './access';
import { envelopeSchema } from './envelope';
import { EVENT_TYPES } from './events';
import { COMMUNITY_TOPOLOGY, EVENTS_EXCHANGE, NOTIFICATION_TYPE_HEADER } from './topology';

/**
 * The broker contract (docs/CONTRACT.md "Broker contract") as an AsyncAPI 3.0 document, generated
 * from the code that enforces it: one channel per routing key of the topic exchange (the routing
 * key is the event type), one message per event type (its envelope around its typebox `data`
 * schema, with the AMQP headers), a `send` operation for its producers and a `receive` operation per
 * queue bound to it. `npm run contracts:asyncapi` writes docs/asyncapi.yaml; asyncapi.spec.ts fails
 * while the committed file differs from what this generates, so a new event type in EVENT_TYPES
 * (or a new binding) needs the script run again, in the same commit.
 */
export const ASYNCAPI_FILE = 'docs/asyncapi.yaml';

export interface EventRegistryEntry {
  version: number;
  // TypeBox TObject: JSON Schema at runtime.
  dataSchema: Parameters<typeof envelopeSchema>[2];
}

export interface AsyncApiSources {
  events: Readonly<Record<string, EventRegistryEntry>>;
  topology: Topology;
}

/** A typebox schema as plain JSON Schema: its symbols dropped, and no `$id` (the document names it). */
function jsonSchema(schema: unknown): Record<string, unknown> {
  const plain = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
  delete plain['$id'];
  return plain;
}

/** A message's id in the document: `user.mentioned` v1 → `user.mentioned.v1`. */
const messageId = (type: string, version: number) => `${type}.v${version}`;
/** Channel and operation ids allow letters, digits, `.`, `-` and `_` (a routing key already is that). */
const safe = (s: string) => s.replace(/[^\w.-]/g, '_');

/** The queues bound to `type` on the events exchange, and those fed through a headers exchange bound to it. */
function consumersOf(topology: Topology, type: string): Array<{ queue: string; via?: string }> {
  const direct = topology.queues
    .filter((q) => q.bindings.some((b) => b.exchange === EVENTS_EXCHANGE && (b.routingKeys ?? []).includes(type)))
    .map((q) => ({ queue: q.name }));
  const relays = (topology.exchanges ?? []).filter((e) =>
    (e.bindings ?? []).some((b) => b.exchange === EVENTS_EXCHANGE && (b.routingKeys ?? []).includes(type)),
  );
  const relayed = relays.flatMap((relay) =>
    topology.queues
      .filter((q) => q.bindings.some((b) => b.exchange === relay.name))
      .map((q) => ({ queue: q.name, via: relay.name })),
  );
  return [...direct, ...relayed];
}

function headersSchema(type: string, version: number): Record<string, unknown> {
  return {
    type: 'object',
    required: ['x-schema-version'],
    properties: {
      'x-schema-version': { type: 'integer', const: version, description: 'the envelope `version`' },
      traceparent: { type: 'string', description: 'W3C Trace Context, when the producer traces (optional)' },
      tracestate: { type: 'string', description: 'W3C Trace Context (optional)' },
      ...(type === 'notification.created'
        ? {
            [NOTIFICATION_TYPE_HEADER]: {
              type: 'string',
              description:
                "the notification's `data.type`, for the headers exchange that feeds email-service's critical lane",
            },
          }
        : {}),
    },
  };
}

const AMQP_PROPERTIES =
  'AMQP properties: `content_type` application/json, `delivery_mode` 2 (persistent), `message_id` = the envelope `id` (consumers deduplicate on it), `type` = the event type, `timestamp`, `correlation_id` = the envelope `correlationId`, and `user_id` = the broker user of a producer of the type (a consumer dead-letters any other, and a missing one). At most 1 MiB.';

/** The AsyncAPI document, as an object (`asyncApiYaml` writes it). */
export function asyncApiDocument(sources: AsyncApiSources = { events: EVENT_TYPES, topology: COMMUNITY_TOPOLOGY }) {
  const { events, topology } = sources;
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const messages: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {};
  const exchange = { name: EVENTS_EXCHANGE, type: 'topic', durable: true, autoDelete: false, vhost: COMMUNITY_VHOST };

  for (const [type, { version, dataSchema }] of Object.entries(events)) {
    const id = messageId(type, version);
    const channel = safe(type);
    const producers = topology.producers?.[type] ?? [];
    const consumers = consumersOf(topology, type);
    schemas[id] = jsonSchema(envelopeSchema(type, version, dataSchema));
    messages[id] = {
      name: type,
      title: `${type} v${version}`,
      contentType: 'application/json',
      correlationId: { location: '$message.payload#/correlationId' },
      headers: headersSchema(type, version),
      payload: { $ref: `#/components/schemas/${id}` },
      bindings: { amqp: { messageType: type, bindingVersion: '0.3.0' } },
    };
    channels[channel] = {
      address: type,
      title: type,
      description: `Routing key \`${type}\` on the topic exchange \`${EVENTS_EXCHANGE}\`. Bound by: ${
        consumers.map((c) => (c.via ? `${c.queue} (through ${c.via})` : c.queue)).join(', ') || 'no queue'
      }.`,
      messages: { [id]: { $ref: `#/components/messages/${id}` } },
      bindings: { amqp: { is: 'routingKey', exchange, bindingVersion: '0.3.0' } },
    };
    const message = { $ref: `#/channels/${channel}/messages/${id}` };
    operations[`publish.${channel}`] = {
      action: 'send',
      channel: { $ref: `#/channels/${channel}` },
      summary: `Published by ${producers.join(', ') || 'no producer'} (its broker user is the AMQP user_id)`,
      description: AMQP_PROPERTIES,
      messages: [message],
      bindings: { amqp: { deliveryMode: 2, mandatory: true, bindingVersion: '0.3.0' } },
    };
    for (const { queue, via } of consumers) {
      operations[`receive.${safe(queue)}.${channel}`] = {
        action: 'receive',
        channel: { $ref: `#/channels/${channel}` },
        summary: `${queue} consumes it${via ? ` (through ${via})` : ''}`,
        description:
          'A quorum queue with a dead-letter queue `<queue>.dlq` and delayed-retry queues `<queue>.retry.<delay>`; a retry returns to this queue only (docs/CONTRACT.md).',
        messages: [message],
        bindings: { amqp: { ack: true, bindingVersion: '0.3.0' } },
      };
    }
  }

  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Community notifications: broker contract',
      version: '1',
      description:
        'The events on the `community.events` topic exchange (docs/CONTRACT.md "Broker contract"): the routing key is the event type; the body is the envelope, its `data` as each message says (extra `data` fields are allowed, an envelope field is not). Generated from libs/contracts by `npm run contracts:asyncapi`: do not edit by hand.',
    },
    defaultContentType: 'application/json',
    servers: {
      local: {
        host: '127.0.0.1:5672',
        protocol: 'amqp',
        protocolVersion: '0.9.1',
        pathname: `/${COMMUNITY_VHOST}`,
        description: `The vhost \`${COMMUNITY_VHOST}\`; in production amqps on port 5671, each service as its own broker user (docs/DEPLOY.md).`,
      },
    },
    channels,
    operations,
    components: { messages, schemas },
  };
}

/** docs/asyncapi.yaml's text. */
export function asyncApiYaml(sources?: AsyncApiSources): string {
  const header = '# Generated by `npm run contracts:asyncapi` from libs/contracts (asyncapi.ts). Do not edit.\n';
  return header + stringify(asyncApiDocument(sources), { lineWidth: 0, aliasDuplicateObjects: false });
}
