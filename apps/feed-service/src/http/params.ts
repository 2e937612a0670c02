import { Type } from '@sinclair/typebox';

/**
 * The user id of every feed path. Bounded like the contract's ids, and without NUL: PostgreSQL
 * refuses NUL in text, so an authorised caller (an admin) asking for such a user would get a 500
 * from the query instead of a 400. An unpaired surrogate cannot arrive here: its percent-encoding
 * is not UTF-8, and fastify answers 400 before routing.
 */
export const UserParams = Type.Object({
  userId: Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' }),
});
