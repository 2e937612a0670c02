import type { FastifyInstance } from 'fastify';
import { OPENAPI_PATH, openapiPath } from '@community/service';
import { parseRouteTree, type Route } from '../authorization-matrix/table';

/**
 * What an app's /openapi.json leaves out, against the app's own router (fastify's printRoutes, read
 * like the authorization matrix reads it, each parsed route checked with hasRoute): the document is
 * generated from @fastify/swagger's onRoute hook, so a route registered where the hook cannot see
 * it, or hidden, would be served but not described. HEAD is fastify's automatic twin of each GET
 * (the document describes the GET); /openapi.json is the document itself.
 */
export interface Coverage {
  /** `METHOD /path` served by the app, with no operation in the document. */
  undocumented: string[];
  /** Operations of the document no route serves. */
  stale: string[];
  /**
   * Operations without a described success answer (no 2xx response schema: fastify serialises
   * nothing). A described 204 counts: it has no body to describe (RFC 9110), only the status.
   */
  withoutResponseSchema: string[];
}

interface Operation {
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }>;
}
export interface OpenApiDocument {
  openapi: string;
  paths?: Record<string, Record<string, Operation>>;
  components?: { securitySchemes?: Record<string, unknown> };
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export function servedRoutes(name: string, app: FastifyInstance): Route[] {
  const routes = parseRouteTree(name, app.printRoutes({ commonPrefix: false }));
  for (const r of routes)
    if (!app.hasRoute({ method: r.method as 'GET', url: r.url }))
      throw new Error(`parsed ${name} ${r.method} ${r.url}, which its router does not have`);
  return routes.filter((r) => r.method !== 'HEAD' && r.url !== OPENAPI_PATH);
}

export function coverage(routes: readonly Route[], document: OpenApiDocument): Coverage {
  const key = (method: string, path: string) => `${method.toUpperCase()} ${path}`;
  const served = new Set(routes.map((r) => key(r.method, openapiPath(r.url))));
  const documented: Array<[string, Operation]> = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]): [string, Operation] => [key(method, path), operation]),
  );
  const inDocument = new Set(documented.map(([k]) => k));
  return {
    undocumented: [...served].filter((k) => !inDocument.has(k)),
    stale: [...inDocument].filter((k) => !served.has(k)),
    withoutResponseSchema: documented
      .filter(
        ([, op]) =>
          !Object.entries(op.responses ?? {}).some(
            ([status, response]) =>
              (status === '204' && response.description !== undefined) ||
              (/^2/.test(status) && Object.values(response.content ?? {}).some((media) => media.schema !== undefined)),
          ),
      )
      .map(([k]) => k),
  };
}
