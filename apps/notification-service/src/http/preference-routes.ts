import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { EmailChannelSchema, NOTIFICATION_TYPES, QUIET_TIME_PATTERN } from '@community/contracts';
import { errorResponses } from '@community/service';
import { parsePreferencesUpdate } from '../domain/preferences';
import { getPreferences, updatePreferences } from '../store/preferences';
import type { InboxGuards } from './auth';
import { ERRORS } from './errors';
import { UserParams } from './params';

const TAGS = ['preferences'];

// The answer and the documented PUT body, push included (fastify serialises from the response
// schema and drops any field it does not list: docs/SERVICE-TEMPLATE.md "API description").
const ChannelPreference = Type.Object({
  inApp: Type.Boolean(),
  email: EmailChannelSchema,
  push: Type.Boolean({ description: 'Web Push to the browsers the user subscribed (docs/PUSH.md)' }),
});
const ChannelUpdate = Type.Object(
  {
    inApp: Type.Optional(Type.Boolean()),
    email: Type.Optional(EmailChannelSchema),
    push: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const QuietTime = Type.String({ pattern: QUIET_TIME_PATTERN, description: 'local time, 24 h "HH:MM"' });
const QuietHoursSchema = Type.Union(
  [
    Type.Object(
      { start: QuietTime, end: QuietTime },
      {
        additionalProperties: false,
        description:
          'a daily window in the user\'s time zone (user.upserted `timezone`, else UTC); start > end wraps midnight ("22:00"-"07:00"); start == end is refused',
      },
    ),
    Type.Null(),
  ],
  {
    description:
      'quiet hours: email and push of what is created inside wait until they end (security alerts never wait; docs/NOTIFICATIONS.md "Delivery timing"); null: none',
  },
);

/** Every type with its effective channels (the defaults where the user chose nothing), and the quiet hours. */
export const PreferencesBody = Type.Object({
  preferences: Type.Object(Object.fromEntries(NOTIFICATION_TYPES.map((type) => [type, ChannelPreference])), {
    additionalProperties: ChannelPreference,
  }),
  quietHours: QuietHoursSchema,
});

/** PUT's body, checked by parsePreferencesUpdate (NS_INVALID_PREFERENCES names the field). */
export const PreferencesUpdateBody = Type.Object(
  {
    preferences: Type.Optional(
      Type.Object(Object.fromEntries(NOTIFICATION_TYPES.map((type) => [type, Type.Optional(ChannelUpdate)])), {
        additionalProperties: false,
      }),
    ),
    quietHours: Type.Optional(QuietHoursSchema),
  },
  { additionalProperties: false, description: "at least one of 'preferences' and 'quietHours'" },
);

/**
 * GET answers every type with its effective channels (defaults where the user chose nothing) and
 * the quiet hours. PUT changes only the types and channels it names, and the quiet hours when it
 * names them (null removes them); the body is checked by
 * parsePreferencesUpdate, whose messages name the offending field. email-service's service token
 * (scope preferences:opt-out) may GET, and PUT a body that only sets `email: "off"`; anything else 403.
 */
export function registerPreferenceRoutes(app: FastifyInstance, deps: { pool: Pool; guards: InboxGuards }): void {
  const { authorizePreferences, serviceForbidden } = deps.guards;
  const { pool } = deps;

  app.get<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/preferences',
    {
      onRequest: authorizePreferences,
      schema: {
        tags: TAGS,
        summary: 'Every notification type with its effective channels',
        params: UserParams,
        response: { 200: PreferencesBody, ...errorResponses(401, 403) },
      },
    },
    async (request) => getPreferences(pool, request.params.userId),
  );

  app.put<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/preferences',
    {
      onRequest: authorizePreferences,
      // Checked by parsePreferencesUpdate, whose 400s name the field (NS_INVALID_PREFERENCES).
      config: {
        documentedBody: {
          schema: PreferencesUpdateBody,
          description: 'only the types and channels given change, and the quiet hours only when given',
        },
      },
      schema: {
        tags: TAGS,
        summary: 'Changes the types and channels it names, and the quiet hours; answers every type',
        params: UserParams,
        response: { 200: PreferencesBody, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const parsed = parsePreferencesUpdate(request.body);
      if (!parsed.ok) throw ERRORS.INVALID_PREFERENCES(parsed.message);
      // A service token (email-service's opt-out) may only turn email channels off.
      const principal = request.principal;
      if (
        principal?.service &&
        (parsed.quietHours !== undefined ||
          parsed.updates.some((u) => u.inApp !== undefined || u.push !== undefined || u.email !== 'off'))
      ) {
        throw serviceForbidden(principal, 'change preferences other than turning email off');
      }
      return updatePreferences(pool, request.params.userId, parsed.updates, parsed.quietHours);
    },
  );
}
