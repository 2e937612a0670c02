import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Parser } from '@asyncapi/parser';
import { Type } from '@sinclair/typebox';
import { ASYNCAPI_FILE, asyncApiYaml } from './asyncapi';
import { EVENT_TYPES, EVENT_TYPE_NAMES } from './events';
import { COMMUNITY_TOPOLOGY, EVENTS_EXCHANGE } from './topology';

const committed = readFileSync(path.resolve(__dirname, '../../..', ASYNCAPI_FILE), 'utf8');
// Error diagnostics only (severity 0); warnings are the linter's style hints.
const ERROR = 0;

async function parse(text: string) {
  const { document, diagnostics } = await new Parser().parse(text);
  const errors = diagnostics.filter((d) => d.severity === ERROR).map((d) => `${d.path.join('.')}: ${d.message}`);
  return { document, errors };
}

describe('docs/asyncapi.yaml', () => {
  it('is what `npm run contracts:asyncapi` generates from libs/contracts now (run it after changing an event type)', () => {
    // Compared as text: a new type in EVENT_TYPES, a changed data schema or binding makes it stale.
    expect(committed === asyncApiYaml() ? 'up to date' : 'stale: run npm run contracts:asyncapi').toBe('up to date');
  });

  it('is a valid AsyncAPI 3.0 document (@asyncapi/parser)', async () => {
    const { document, errors } = await parse(committed);
    expect(errors).toEqual([]);
    expect(document?.version()).toBe('3.0.0');
  }, 30_000);

  it('has a message and a channel (address = routing key) for every event type of EVENT_TYPES', async () => {
    const { document } = await parse(committed);
    if (!document) throw new Error('the committed document does not parse');
    const messageNames = document
      .components()
      .messages()
      .all()
      .map((m) => m.name());
    const addresses = document
      .channels()
      .all()
      .map((c) => c.address());
    expect(EVENT_TYPE_NAMES.filter((type) => !messageNames.includes(type))).toEqual([]);
    expect(EVENT_TYPE_NAMES.filter((type) => !addresses.includes(type))).toEqual([]);
    // Each message's payload is the envelope of its type and version.
    for (const type of EVENT_TYPE_NAMES) {
      const message = document.components().messages().get(`${type}.v${EVENT_TYPES[type].version}`);
      const payload = message?.payload()?.json() as { properties?: Record<string, { const?: unknown }> } | undefined;
      expect([type, payload?.properties?.['type']?.const]).toEqual([type, type]);
    }
  }, 30_000);
});

describe('the generator', () => {
  it('adds a channel, a message with the data schema, and its operations for a new event type', async () => {
    const events = {
      ...EVENT_TYPES,
      'badge.awarded': { version: 2, dataSchema: Type.Object({ badgeId: Type.String(), userId: Type.String() }) },
    };
    const topology = {
      ...COMMUNITY_TOPOLOGY,
      producers: { ...COMMUNITY_TOPOLOGY.producers, 'badge.awarded': ['demo-community-api'] },
      queues: COMMUNITY_TOPOLOGY.queues.map((q) =>
        q.name === 'notification-service.standard'
          ? { ...q, bindings: [...q.bindings, { exchange: EVENTS_EXCHANGE, routingKeys: ['badge.awarded'] }] }
          : q,
      ),
    };
    const text = asyncApiYaml({ events, topology });
    expect(text).not.toEqual(committed);
    const { document, errors } = await parse(text);
    expect(errors).toEqual([]);
    const channel = document?.channels().get('badge.awarded');
    expect(channel?.address()).toBe('badge.awarded');
    const data = document?.components().messages().get('badge.awarded.v2')?.payload()?.json() as {
      properties: { data: { required: string[] }; version: { const: number } };
    };
    expect([data.properties.data.required, data.properties.version.const]).toEqual([['badgeId', 'userId'], 2]);
    expect(
      document
        ?.operations()
        .all()
        .filter((o) => o.channels().all()[0]?.address() === 'badge.awarded')
        .map((o) => [o.action(), o.id()]),
    ).toEqual([
      ['send', 'publish.badge.awarded'],
      ['receive', 'receive.notification-service.standard.badge.awarded'],
    ]);
  }, 30_000);
});
