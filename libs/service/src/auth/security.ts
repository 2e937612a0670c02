// What each guard accepts, in OpenAPI's words: the services' /openapi.json takes a route's security
// from the guard on its onRequest hook (openapi.ts), so the document says what the guard enforces.

/** One OpenAPI security requirement: scheme name → scopes (role names, for bearer schemes in 3.1). */
export type SecurityRequirement = Record<string, string[]>;

/** The three bearer tokens of docs/CONTRACT.md "HTTP contract", as OpenAPI security schemes. */
export const SECURITY_SCHEMES = {
  userToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      "A user's token from the community site: HS256 with JWT_SECRET, `iss` USER_TOKEN_ISSUER, `aud` USER_TOKEN_AUDIENCE, `exp` within USER_TOKEN_MAX_LIFETIME_MS, `sub` the user id. Opens only the user's own /v1/users/{userId}/… routes; a `scope` claim grants nothing.",
  },
  adminToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      "An operator's token (`npm run ops -- token`): EdDSA with the operator's own Ed25519 key, header `kid` naming a key of ADMIN_KEYS, `iss` community-ops, `aud` the service called, `exp` within ADMIN_TOKEN_MAX_LIFETIME_MS. Opens the admin routes and every user's resources.",
  },
  serviceToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      "A calling service's token: EdDSA with that service's own Ed25519 key, no `kid`, `iss`/`sub` the service, `aud` this service, `scope` what it may do (e.g. email-service's `preferences:opt-out`).",
  },
} as const;

const security = new WeakMap<object, SecurityRequirement[]>();

/** Records what a guard accepts; returns the guard. */
export function withSecurity<F extends object>(guard: F, requirements: SecurityRequirement[]): F {
  security.set(guard, requirements);
  return guard;
}

/**
 * The security of a route's hooks (`onRequest` or `preHandler`, one function or a list): the first
 * guard's requirements, or undefined when none of the hooks is a guard (a public route).
 */
export function securityOf(hooks: unknown): SecurityRequirement[] | undefined {
  for (const hook of [hooks].flat()) {
    if (typeof hook === 'function' && security.has(hook)) return security.get(hook);
  }
  return undefined;
}

/** The requirements of the guards, for a route whose guard is a scope's hook (declare them in `schema.security`). */
export const SECURITY: {
  ownOrAdmin: SecurityRequirement[];
  ownOrAdminOrService: (scope: string) => SecurityRequirement[];
  adminOnly: SecurityRequirement[];
} = {
  /** `ownOrAdmin`: the user themself, or an operator. */
  ownOrAdmin: [{ userToken: [] }, { adminToken: [] }],
  /** `ownOrAdminOrService(scope)`: also a service token holding `scope`. */
  ownOrAdminOrService: (scope: string): SecurityRequirement[] => [
    { userToken: [] },
    { adminToken: [] },
    { serviceToken: [scope] },
  ],
  /** `adminOnly`: an operator's admin token. */
  adminOnly: [{ adminToken: [] }],
};
