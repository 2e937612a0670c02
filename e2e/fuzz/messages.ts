import type { Canaries } from './canaries';
import type { Rng } from './random';
import { INJECTIONS } from './strings';

/**
 * Bad messages for the topic exchange, built from the public contract only (docs/CONTRACT.md):
 * a valid envelope of each consumed type is made invalid by exactly one kind of defect, so every
 * one of them must end in the DLQ of each queue it is routed to, with the reason in its headers.
 */

/** Where each routing key lands (the bindings of the contract), for the consumed types. */
export const ROUTES: Record<string, string[]> = {
  'user.mentioned': ['notification-service.critical'],
  'security.alert': ['notification-service.critical'],
  'user.upserted': ['notification-service.standard', 'email-service.users'],
  'comment.created': ['notification-service.standard'],
  'reaction.added': ['notification-service.standard'],
  'user.followed': ['notification-service.standard', 'feed-service.activity'],
  // feed-service's own: its activity queue only.
  'user.unfollowed': ['feed-service.activity'],
  'post.published': ['feed-service.activity'],
  // The critical lane gets notification.created through the headers exchange, on the
  // notification-type header (libs/contracts topology.ts): bad messages carry it (see below) so
  // that both email lanes are fuzzed. push-service's queue is bound on the routing key.
  'notification.created': ['email-service.send', 'email-service.send-critical', 'push-service.send'],
};

/** Producers' headers a routing key's messages carry, so they reach every queue in ROUTES. */
const ROUTING_HEADERS: Record<string, Record<string, string>> = {
  'notification.created': { 'notification-type': 'security_alert' },
};

/** Queues that have a consumer in the run: every queue a bad message reaches. */
export const CONSUMED_QUEUES = [
  'notification-service.critical',
  'notification-service.standard',
  'email-service.users',
  'email-service.send',
  'email-service.send-critical',
  'feed-service.activity',
  'push-service.send',
];

/** The user every bad message is about: nothing may ever reach their inbox or mailbox. */
export const VICTIM = 'fuzz-victim';
const ACTOR = 'fuzz-mallory';

type Data = Record<string, unknown>;
interface TypeSpec {
  data: (rng: Rng, c: Canaries) => Data;
  required: string[];
  optional: string[];
}

const TYPES: Record<string, TypeSpec> = {
  'user.upserted': {
    data: (_r, c) => ({ userId: VICTIM, email: c.email(), displayName: 'Victim', locale: 'en' }),
    required: ['userId', 'email', 'displayName'],
    optional: ['locale'],
  },
  'user.mentioned': {
    data: (r, c) => ({
      commentId: r.uuid(),
      postId: r.uuid(),
      actorId: ACTOR,
      mentionedUserId: VICTIM,
      excerpt: `ping ${c.email()}`,
    }),
    required: ['commentId', 'postId', 'actorId', 'mentionedUserId', 'excerpt'],
    optional: [],
  },
  'comment.created': {
    data: (r) => ({
      commentId: r.uuid(),
      postId: r.uuid(),
      postAuthorId: VICTIM,
      authorId: ACTOR,
      parentCommentId: r.uuid(),
      parentAuthorId: VICTIM,
      excerpt: 'a reply',
    }),
    required: ['commentId', 'postId', 'postAuthorId', 'authorId', 'excerpt'],
    optional: ['parentCommentId', 'parentAuthorId'],
  },
  'reaction.added': {
    data: (r) => ({
      reactionId: r.uuid(),
      actorId: ACTOR,
      targetType: 'post',
      targetId: r.uuid(),
      targetAuthorId: VICTIM,
      emoji: 'heart',
    }),
    required: ['reactionId', 'actorId', 'targetType', 'targetId', 'targetAuthorId', 'emoji'],
    optional: [],
  },
  'user.followed': {
    data: () => ({ followerId: ACTOR, followeeId: VICTIM }),
    required: ['followerId', 'followeeId'],
    optional: [],
  },
  'user.unfollowed': {
    data: () => ({ followerId: ACTOR, followeeId: VICTIM }),
    required: ['followerId', 'followeeId'],
    optional: [],
  },
  'post.published': {
    data: (r, c) => ({ postId: r.uuid(), authorId: VICTIM, title: 'A post', excerpt: `by ${c.email()}` }),
    required: ['postId', 'authorId', 'title', 'excerpt'],
    optional: [],
  },
  'security.alert': {
    data: (r, c) => ({
      alertId: r.uuid(),
      userId: VICTIM,
      kind: 'new_login',
      detail: `session ${c.token()} from ${c.email()}`,
    }),
    required: ['alertId', 'userId', 'kind', 'detail'],
    optional: [],
  },
  'notification.created': {
    data: (r) => {
      const commentId = r.uuid();
      return {
        notificationId: r.uuid(),
        userId: VICTIM,
        type: 'mention',
        idempotencyKey: `mention:${commentId}:${VICTIM}`,
        actorId: ACTOR,
        resourceType: 'comment',
        resourceId: commentId,
        emailChannel: 'immediate',
        excerpt: 'hello',
      };
    },
    required: ['notificationId', 'userId', 'type', 'idempotencyKey', 'resourceType', 'resourceId', 'emailChannel'],
    optional: ['actorId', 'excerpt'],
  },
};

const ENVELOPE_FIELDS = ['id', 'type', 'version', 'occurredAt', 'producer', 'correlationId', 'data'];
/** Upper bounds of the contract's string fields (ids 256, excerpt 500, …): one past each is invalid. */
const MAX_LENGTH: Record<string, number> = {
  excerpt: 500,
  detail: 2000,
  displayName: 200,
  title: 300,
  kind: 100,
  emoji: 64,
  locale: 35,
  resourceType: 64,
  idempotencyKey: 1024,
  email: 254,
  producer: 128,
  correlationId: 256,
};

export interface BadMessage {
  /** Index in the run: carried in the x-fuzz-id header to match DLQ copies to what was sent. */
  n: number;
  defect: string;
  routingKey: string;
  body: Buffer;
  properties: {
    messageId?: string;
    contentType?: string;
    type?: string;
    headers: Record<string, unknown>;
    persistent: true;
  };
  /** The queues a copy is routed to. */
  queues: string[];
}

export function validEnvelope(rng: Rng, canaries: Canaries, type: string, n: number): Data {
  return {
    id: rng.uuid(),
    type,
    version: 1,
    occurredAt: new Date().toISOString(),
    producer: 'fuzz',
    correlationId: `fuzz-${n}`,
    data: TYPES[type].data(rng, canaries),
  };
}

const WRONG_VALUES: unknown[] = [0, -1, 1.5, true, false, null, [], ['a', 'b'], {}, { nested: 'x' }, 1e308];
const NON_OBJECTS = ['[]', '[1,2]', '42', '"a string"', 'null', 'true', '""'];

type Defect = (
  rng: Rng,
  e: Data,
  spec: TypeSpec,
  c: Canaries,
) => { body: string | Buffer; props?: Partial<BadMessage['properties']>; omitMessageId?: boolean };

/** Each defect breaks the contract in one way. Weighted by repetition. */
const DEFECTS: Record<string, Defect> = {
  'malformed-json': (rng, e) => {
    const text = JSON.stringify(e);
    return { body: text.slice(0, rng.int(0, text.length - 1)) };
  },
  'garbage-bytes': (rng) => {
    const b = Buffer.alloc(rng.int(1, 200));
    for (let i = 0; i < b.length; i++) b[i] = rng.int(0, 255);
    b[0] = rng.pick([0x00, 0xff, 0x3c, 0x7b]); // never a valid JSON start except '{', which the rest breaks
    if (b[0] === 0x7b) b[b.length - 1] = 0xff;
    return { body: b };
  },
  'invalid-utf8': (rng, e) => {
    const text = JSON.stringify(e);
    const at = text.indexOf('"', text.indexOf('"producer"') + 11) + 1;
    const bad = rng.pick([[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf8, 0x88, 0x80, 0x80, 0x80]]);
    return { body: Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bad), Buffer.from(text.slice(at))]) };
  },
  'not-an-object': (rng) => ({ body: rng.pick(NON_OBJECTS) }),
  'empty-body': () => ({ body: '' }),
  'wrong-type': (rng, e, spec) => {
    const inData = rng.chance(0.6);
    if (inData) {
      const field = rng.pick([...spec.required, ...spec.optional]);
      (e.data as Data)[field] = rng.pick(WRONG_VALUES);
    } else {
      const field = rng.pick(ENVELOPE_FIELDS.filter((f) => f !== 'type'));
      e[field] =
        field === 'version'
          ? rng.pick(['1', 1.5, null, true, [1]])
          : field === 'data'
            ? rng.pick(['x', 1, null, [], true])
            : rng.pick(WRONG_VALUES);
    }
    return { body: JSON.stringify(e) };
  },
  'missing-field': (rng, e, spec) => {
    if (rng.chance(0.5)) delete (e.data as Data)[rng.pick(spec.required)];
    else delete e[rng.pick(ENVELOPE_FIELDS)];
    return { body: JSON.stringify(e) };
  },
  'extra-envelope-field': (rng, e, _s, c) => {
    e[rng.pick(['extra', 'payload', '__proto__x', 'userId', 'Data', 'ID'])] = rng.chance(0.5)
      ? c.email()
      : rng.int(0, 9);
    return { body: JSON.stringify(e) };
  },
  'unknown-type': (rng, e, _s, c) => {
    e.type = rng.pick([
      'user.exploded',
      'USER.MENTIONED',
      'user.mentioned ',
      '',
      'user.*',
      '#',
      c.email(),
      rng.pick(INJECTIONS),
    ]);
    return { body: JSON.stringify(e) };
  },
  'unknown-version': (rng, e) => {
    e.version = rng.pick([0, 2, 3, 99, -1, 2 ** 31, Number.MAX_SAFE_INTEGER]);
    return { body: JSON.stringify(e) };
  },
  'bad-format': (rng, e, _s, c) => {
    const which = rng.pick(['id', 'occurredAt', 'producer', 'email']);
    if (which === 'id')
      e.id = rng.pick(['not-a-uuid', '', '00000000-0000-0000-0000-00000000000g', rng.pick(INJECTIONS)]);
    else if (which === 'occurredAt')
      e.occurredAt = rng.pick(['2026-02-30T10:00:00Z', 'yesterday', '2026-11-29 10:00:00', '2026-11-29T25:00:00Z', '']);
    else if (which === 'producer') e.producer = '';
    else if (e.type === 'user.upserted')
      (e.data as Data).email = rng.pick(['not-an-email', `${c.email()}>`, '@canary-mail.test', `<${c.email()}>`]);
    else (e.data as Data)[Object.keys(e.data as Data)[0]] = '';
    return { body: JSON.stringify(e) };
  },
  'nul-byte': (rng, e, spec) => {
    const field = rng.pick(spec.required.filter((f) => typeof (e.data as Data)[f] === 'string'));
    const v = String((e.data as Data)[field]);
    (e.data as Data)[field] = `${v.slice(0, 3)}\u0000${v.slice(3)}`;
    return { body: JSON.stringify(e) };
  },
  'lone-surrogate': (rng, e, spec) => {
    const field = rng.pick(spec.required.filter((f) => typeof (e.data as Data)[f] === 'string'));
    const v = String((e.data as Data)[field]);
    (e.data as Data)[field] = `${v}${rng.pick(['\ud800', '\udfff', '\udbff', '\udc00x'])}`;
    // JSON.stringify escapes lone surrogates as \udXXX: valid UTF-8 bytes, invalid Unicode text.
    return { body: JSON.stringify(e) };
  },
  'deep-nul': (rng, e) => {
    // An extra data field (allowed) nested past any recursion limit, with a NUL at the bottom.
    const depth = rng.int(1_000, 50_000);
    const text = JSON.stringify(e).replace(
      '"data":{',
      `"data":{"deep":${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)},`,
    );
    return { body: text };
  },
  'oversized-field': (rng, e, spec) => {
    const candidates = [...spec.required, ...spec.optional].filter((f) => typeof (e.data as Data)[f] === 'string');
    const field = rng.pick(candidates);
    const max = MAX_LENGTH[field] ?? 256;
    (e.data as Data)[field] = 'x'.repeat(max + rng.int(1, rng.chance(0.1) ? 100_000 : 2_000));
    return { body: JSON.stringify(e) };
  },
  'oversized-payload': (rng, e) => {
    // A big body whose envelope carries a field the contract does not have.
    e.attachment = 'A'.repeat(rng.int(100_000, 1_000_000));
    return { body: JSON.stringify(e) };
  },
  'wrong-content-type': (rng, e) => ({
    body: JSON.stringify(e),
    props: {
      contentType: rng.pick([
        'text/plain',
        'application/xml',
        'application/octet-stream',
        'text/html; charset=utf-8',
        'application/x-www-form-urlencoded',
        'application/jsonx',
      ]),
    },
  }),
  'missing-message-id': (_rng, e) => ({ body: JSON.stringify(e), omitMessageId: true }),
};

const DEFECT_NAMES = Object.keys(DEFECTS);

/** Headers the runtime writes, forged by a producer: they must not change where a bad message ends. */
function forgedHeaders(rng: Rng): Record<string, unknown> {
  return {
    'x-retry-attempt': rng.pick([-5, 0, 99, 1e9, 'x', null]),
    'x-first-failure-at': rng.pick(['yesterday', '', 42]),
    'x-original-queue': rng.pick(['email-service.send', '', 'nowhere']),
    'x-error-kind': 'transient',
    'x-delivery-count': rng.pick([100, -1, 'many']),
    'x-schema-version': rng.pick([2, 'v1', null]),
  };
}
const ROUTING_KEYS = Object.keys(ROUTES);

export function badMessage(rng: Rng, canaries: Canaries, n: number): BadMessage {
  const routingKey = rng.pick(ROUTING_KEYS);
  // A big payload is rare (1 in 200): the rest of the run stays fast.
  const defect = rng.chance(0.005)
    ? 'oversized-payload'
    : rng.pick(DEFECT_NAMES.filter((d) => d !== 'oversized-payload'));
  const envelope = validEnvelope(rng, canaries, routingKey, n);
  // The id as the producer set it, before the defect (which may break the body's id).
  const eventId = envelope.id as string;
  const made = DEFECTS[defect](rng, envelope, TYPES[routingKey], canaries);
  return {
    n,
    defect,
    routingKey,
    body: Buffer.isBuffer(made.body) ? made.body : Buffer.from(made.body, 'utf8'),
    properties: {
      messageId: made.omitMessageId ? undefined : eventId,
      contentType: 'application/json',
      type: routingKey,
      persistent: true,
      headers: {
        'x-schema-version': 1,
        ...ROUTING_HEADERS[routingKey],
        ...(rng.chance(0.1) ? forgedHeaders(rng) : {}),
        'x-fuzz-id': n,
      },
      ...made.props,
    },
    queues: ROUTES[routingKey],
  };
}

export interface GoodEvent {
  id: string;
  type: string;
  correlationId: string;
  [field: string]: unknown;
}

const good = (rng: Rng, type: string, n: number, data: Data): GoodEvent => ({
  id: rng.uuid(),
  type,
  version: 1,
  occurredAt: new Date().toISOString(),
  producer: 'fuzz',
  correlationId: `good-${n}`,
  data,
});

/** A valid event that must be processed exactly once, interleaved with the bad ones. */
export function goodEvent(
  rng: Rng,
  type: 'user.mentioned' | 'reaction.added',
  userId: string,
  actorId: string,
  n: number,
): GoodEvent {
  const data =
    type === 'user.mentioned'
      ? { commentId: rng.uuid(), postId: rng.uuid(), actorId, mentionedUserId: userId, excerpt: `good mention ${n}` }
      : {
          reactionId: rng.uuid(),
          actorId,
          targetType: 'post',
          targetId: rng.uuid(),
          targetAuthorId: userId,
          emoji: 'tada',
        };
  return good(rng, type, n, data);
}

/** The good user's address, so their mention emails can be counted at the SMTP sink. */
export function goodUser(rng: Rng, userId: string, email: string): GoodEvent {
  return good(rng, 'user.upserted', -1, { userId, email, displayName: 'Good' });
}
