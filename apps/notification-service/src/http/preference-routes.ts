import type { Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { parsePreferencesUpdate } from '../domain/preferences';
import { getPreferences, updatePreferences } from '../store/preferences';
import { authorizeInbox } from './auth';
import { ERRORS } from './errors';
import { UserParams } from './params';

/**
 * GET answers every type with its effective channels (defaults where the user chose nothing).
 * PUT changes only the types and channels it names; the body is checked by
 * parsePreferencesUpdate, whose messages name the offending field.
 */
export function registerPreferenceRoutes(app: FastifyInstance, deps: { pool: Pool }): void {
  const { pool } = deps;

  app.get<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/preferences',
    { onRequest: authorizeInbox, schema: { params: UserParams } },
    async (request) => ({ preferences: await getPreferences(pool, request.params.userId) }),
  );

  app.put<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/preferences',
    { onRequest: authorizeInbox, schema: { params: UserParams } },
    async (request) => {
      const parsed = parsePreferencesUpdate(request.body);
      if (!parsed.ok) throw ERRORS.INVALID_PREFERENCES(parsed.message);
      return { preferences: await updatePreferences(pool, request.params.userId, parsed.updates) };
    },
  );
}
