import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { errorResponses } from '@community/service';
import { ENDPOINT_MAX_LENGTH, parseEndpoint, parseSubscription, type EndpointRules } from '../domain/subscription';
import type { PushMetrics } from '../metrics';
import { subscribe, unsubscribe } from '../store/subscriptions';
import { authorizeSubscriptions } from './auth';
import { ERRORS } from './errors';

const TAGS = ['push'];

/** Bounded like the contract's ids, and without NUL (PostgreSQL refuses it in text). */
const UserParams = Type.Object({
  userId: Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' }),
});

/** The browser's `PushSubscription.toJSON()`, documented; checked by parseSubscription (PS_INVALID_SUBSCRIPTION). */
const SubscriptionBody = Type.Object(
  {
    endpoint: Type.String({
      maxLength: ENDPOINT_MAX_LENGTH,
      description: "the push service's URL for this browser (https)",
    }),
    expirationTime: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
    keys: Type.Object({
      p256dh: Type.String({ description: "the browser's P-256 public key, 65 bytes, base64url" }),
      auth: Type.String({ description: "the browser's auth secret, 16 bytes, base64url" }),
    }),
  },
  { additionalProperties: false },
);

const EndpointBody = Type.Object(
  { endpoint: Type.String({ maxLength: ENDPOINT_MAX_LENGTH }) },
  { additionalProperties: false },
);
const EndpointQuery = Type.Object({ endpoint: Type.Optional(Type.String({ maxLength: ENDPOINT_MAX_LENGTH })) });

/** What the API answers for a subscription: every field listed (fastify drops the others). */
const SubscriptionAnswer = Type.Object({
  id: Type.String({ description: 'the subscription, in the ledger rows of its pushes' }),
  userId: Type.String(),
  endpoint: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
});

const VapidKeyAnswer = Type.Object({
  publicKey: Type.String({
    description: "the VAPID public key, base64url: PushManager.subscribe's applicationServerKey",
  }),
});

export interface SubscriptionRouteDeps {
  pool: Pool;
  metrics: PushMetrics;
  rules: EndpointRules;
  maxPerUser: number;
  vapidPublicKey: string;
}

/**
 * POST /v1/users/:userId/push-subscriptions: 201 created, 200 when the endpoint was the user's
 * already (keys refreshed), 409 at the per-user limit. DELETE with the endpoint in the body or the
 * query: 204, whether or not it was there (a browser unsubscribing twice). GET
 * /v1/push/vapid-public-key: public, for the page that subscribes.
 */
export function registerSubscriptionRoutes(app: FastifyInstance, deps: SubscriptionRouteDeps): void {
  const { pool, metrics } = deps;

  app.get(
    '/v1/push/vapid-public-key',
    {
      schema: {
        tags: TAGS,
        summary:
          "The VAPID public key a browser subscribes with (public; PushManager.subscribe's applicationServerKey)",
        response: { 200: VapidKeyAnswer, ...errorResponses() },
      },
    },
    async () => ({ publicKey: deps.vapidPublicKey }),
  );

  app.post<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/push-subscriptions',
    {
      onRequest: authorizeSubscriptions,
      // Checked by parseSubscription, whose 400s name the field (PS_INVALID_SUBSCRIPTION).
      config: { documentedBody: { schema: SubscriptionBody, description: "the browser's PushSubscription JSON" } },
      schema: {
        tags: TAGS,
        summary: "Registers a browser's push subscription for the user (201 new, 200 already theirs, 409 at the limit)",
        params: UserParams,
        response: {
          201: { ...SubscriptionAnswer, description: 'Subscribed' },
          200: { ...SubscriptionAnswer, description: 'Already subscribed: the keys were refreshed' },
          ...errorResponses(400, 401, 403, 409),
        },
      },
    },
    async (request, reply) => {
      const parsed = parseSubscription(request.body, deps.rules);
      if (!parsed.ok) throw ERRORS.INVALID_SUBSCRIPTION(parsed.message);
      const { userId } = request.params;
      const result = await subscribe(pool, userId, parsed.value, deps.maxPerUser);
      if (result.result === 'limit') {
        metrics.subscriptions.inc({ action: 'limit' });
        throw ERRORS.TOO_MANY_SUBSCRIPTIONS(result.count, deps.maxPerUser);
      }
      metrics.subscriptions.inc({ action: result.result });
      const s = result.subscription;
      return reply
        .code(result.result === 'created' ? 201 : 200)
        .send({ id: s.id, userId, endpoint: s.endpoint, createdAt: s.createdAt.toISOString() });
    },
  );

  app.delete<{ Params: Static<typeof UserParams>; Querystring: Static<typeof EndpointQuery> }>(
    '/v1/users/:userId/push-subscriptions',
    {
      onRequest: authorizeSubscriptions,
      config: {
        documentedBody: { schema: EndpointBody, description: 'the endpoint to remove (or ?endpoint= in the query)' },
      },
      schema: {
        tags: TAGS,
        summary:
          "Removes the user's subscription of an endpoint (body { endpoint } or ?endpoint=); its pending pushes are cancelled",
        params: UserParams,
        querystring: EndpointQuery,
        response: { 204: Type.Null({ description: 'Removed (or was not there)' }), ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const body = request.body as { endpoint?: unknown } | undefined;
      const raw = request.query.endpoint ?? (typeof body === 'object' && body !== null ? body.endpoint : undefined);
      if (raw === undefined) {
        throw ERRORS.INVALID_SUBSCRIPTION('name the endpoint to remove: a body { "endpoint": … } or ?endpoint=');
      }
      // Any endpoint the API could have stored; a stored one is removed whatever the rules are now.
      const endpoint = parseEndpoint(raw, { allowInsecureLocalhost: true });
      if (!endpoint.ok) throw ERRORS.INVALID_SUBSCRIPTION(endpoint.message);
      if (await unsubscribe(pool, request.params.userId, endpoint.value))
        metrics.subscriptions.inc({ action: 'removed' });
      return reply.code(204).send();
    },
  );
}
