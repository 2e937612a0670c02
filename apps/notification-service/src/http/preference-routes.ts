import type { Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { errorResponses } from '@community/service';
import { parsePreferencesUpdate } from '../domain/preferences';
import { getPreferences, updatePreferences } from '../store/preferences';
import type { InboxGuards } from './auth';
import { ERRORS } from './errors';
import { UserParams } from './params';
import { PreferencesBody, PreferencesUpdateBody } from './schemas';

const TAGS = ['preferences'];

/**
 * GET answers every type with its effective channels (defaults where the user chose nothing).
 * PUT changes only the types and channels it names; the body is checked by
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
    async (request) => ({ preferences: await getPreferences(pool, request.params.userId) }),
  );

  app.put<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/preferences',
    {
      onRequest: authorizePreferences,
      // Checked by parsePreferencesUpdate, whose 400s name the field (NS_INVALID_PREFERENCES).
      config: {
        documentedBody: { schema: PreferencesUpdateBody, description: 'only the types and channels given change' },
      },
      schema: {
        tags: TAGS,
        summary: 'Changes the types and channels it names; answers every type',
        params: UserParams,
        response: { 200: PreferencesBody, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const parsed = parsePreferencesUpdate(request.body);
      if (!parsed.ok) throw ERRORS.INVALID_PREFERENCES(parsed.message);
      // A service token (email-service's opt-out) may only turn email channels off.
      const principal = request.principal;
      if (principal?.service && parsed.updates.some((u) => u.inApp !== undefined || u.email !== 'off')) {
        throw serviceForbidden(principal, 'change preferences other than turning email off');
      }
      return { preferences: await updatePreferences(pool, request.params.userId, parsed.updates) };
    },
  );
}
