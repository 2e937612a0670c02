import type { EventOf } from '@community/contracts';
import type { Handler } from '@community/messaging';
import type { UsersStore } from '../store/users';

/**
 * `email-service.users`: keeps the projection of addresses and names. An event older than the
 * stored row (or the same one again) changes nothing and is acked as a duplicate.
 */
export function userUpsertedHandler(users: UsersStore): Handler<EventOf<'user.upserted'>> {
  return async (event) => ((await users.upsert(event)) ? 'processed' : 'duplicate');
}
