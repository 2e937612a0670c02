import type { FastifyInstance } from 'fastify';
import { findUnstorableText } from '@community/contracts';
import { ERRORS } from './errors';

/** Where the first string (key or value) with NUL or an unpaired surrogate is, as `body/title`. */
export function unstorableTextAt(value: unknown, part: string): string | undefined {
  const pointer = findUnstorableText(value);
  return pointer === undefined ? undefined : `${part}${pointer}`;
}

/**
 * Before validation: params, query and body, all of which end up in SQL parameters. NUL and
 * unpaired surrogates pass JSON parsing and the schemas, but not PostgreSQL: a NUL makes the query
 * fail (SQLSTATE 22021, which would be a 500), and an unpaired surrogate is silently stored as
 * U+FFFD. Either way the text would not survive, so the request is refused up front.
 */
export function refuseUnstorableText(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const at =
      unstorableTextAt(request.params, 'params') ??
      unstorableTextAt(request.query, 'querystring') ??
      unstorableTextAt(request.body, 'body');
    if (at !== undefined) throw ERRORS.UNSTORABLE_TEXT(at);
  });
}
