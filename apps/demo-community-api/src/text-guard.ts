import type { FastifyInstance } from 'fastify';
import { ApiError } from './errors';

// NUL and unpaired surrogates pass JSON parsing and the schemas, but not PostgreSQL: a NUL makes the
// query fail (SQLSTATE 22021, which would be a 500), and an unpaired surrogate is silently stored
// as U+FFFD. Either way the text would not survive, so the request is refused up front.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const unstorable = (s: string): boolean => s.includes('\u0000') || LONE_SURROGATE.test(s);

/** Where the first string (key or value) with NUL or an unpaired surrogate is, as `body/title`. */
export function unstorableTextAt(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return unstorable(value) ? path : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, child] of Object.entries(value)) {
    if (unstorable(key)) return `${path}/${JSON.stringify(key)}`;
    const found = unstorableTextAt(child, `${path}/${key}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Before validation: params, query and body, all of which end up in SQL parameters. */
export function refuseUnstorableText(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const at =
      unstorableTextAt(request.params, 'params') ?? unstorableTextAt(request.query, 'querystring') ?? unstorableTextAt(request.body, 'body');
    if (at !== undefined) throw new ApiError('UNSTORABLE_TEXT', at);
  });
}
