import type { Pool } from 'pg';
import type { EventOf } from '@community/contracts';
import type { Handler } from '@community/messaging';
import * as users from '../store/users';

/**
 * `email-service.users`: keeps the projection of addresses and names. An event older than the
 * stored row (or the same one again) changes nothing and is acked as a duplicate.
 */
export function userUpsertedHandler(pool: Pool): Handler<EventOf<'user.upserted'>> {
  return async (event) => ((await users.upsert(pool, event)) ? 'processed' : 'duplicate');
}
