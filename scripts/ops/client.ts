import { readFileSync } from 'node:fs';
import { DEV_ADMIN_KEY_ID, DEV_ADMIN_SIGNING_KEY, ed25519Key } from '@community/config';
import { adminTokenSigner, generateOperatorKey } from '@community/service';

/**
 * How the ops CLI talks to the reconciler: its admin HTTP API, with a bearer token.
 * RECONCILER_URL (default http://127.0.0.1:3004); OPS_TOKEN (an admin token made elsewhere), or an
 * admin token signed here with the operator's own Ed25519 key: OPS_ADMIN_KEY_FILE (PKCS#8 PEM,
 * from `ops keygen`) and OPS_ADMIN_KEY_ID (its kid in the services' ADMIN_KEYS). The services
 * record the operator they bind to that kid; the CLI cannot choose another name. Outside
 * NODE_ENV=production, without them: the development operator's well-known key. JWT_SECRET is
 * never used: it makes user tokens, which open no admin route.
 */
export class UsageError extends Error {}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    message: string,
  ) {
    super(message);
  }
}

/** The service the CLI's admin tokens are for (their `aud`). */
export const RECONCILER_AUDIENCE = 'reconciler';
/** How long a token the CLI signs lives; the services accept at most ADMIN_TOKEN_MAX_LIFETIME_MS (1 h by default). */
export const OPS_TOKEN_TTL_MS = 15 * 60_000;

export interface ClientConfig {
  baseUrl: string;
  token: string;
  /** Whose token it is, for messages: the kid it is signed with (the services name the operator). */
  subject: string;
}

/** An admin token for `audience`, signed with the operator's key from the environment (or the dev key outside production). */
export function operatorToken(env: NodeJS.ProcessEnv, audience = RECONCILER_AUDIENCE): { token: string; kid: string } {
  const file = env.OPS_ADMIN_KEY_FILE;
  const kid = env.OPS_ADMIN_KEY_ID;
  if (!file !== !kid)
    throw new UsageError(
      'set both OPS_ADMIN_KEY_FILE (your private key) and OPS_ADMIN_KEY_ID (its kid in ADMIN_KEYS), or neither',
    );
  if (!file || !kid) {
    if (env.NODE_ENV === 'production') {
      throw new UsageError(
        'set OPS_ADMIN_KEY_FILE and OPS_ADMIN_KEY_ID (your own admin key: `npm run ops -- keygen`), or OPS_TOKEN; NODE_ENV=production has no default',
      );
    }
    return {
      token: adminTokenSigner({
        signingKey: DEV_ADMIN_SIGNING_KEY,
        kid: DEV_ADMIN_KEY_ID,
        audience,
        ttlMs: OPS_TOKEN_TTL_MS,
      })(),
      kid: DEV_ADMIN_KEY_ID,
    };
  }
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`OPS_ADMIN_KEY_FILE: cannot read ${file} (${(err as Error).message})`);
  }
  let signingKey;
  try {
    signingKey = ed25519Key('private', pem);
  } catch (err) {
    throw new UsageError(`OPS_ADMIN_KEY_FILE: ${file} ${(err as Error).message}`);
  }
  return { token: adminTokenSigner({ signingKey, kid, audience, ttlMs: OPS_TOKEN_TTL_MS })(), kid };
}

export function clientConfig(env: NodeJS.ProcessEnv = process.env): ClientConfig {
  const baseUrl = (env.RECONCILER_URL || 'http://127.0.0.1:3004').replace(/\/+$/, '');
  try {
    new URL(baseUrl);
  } catch {
    throw new UsageError(`RECONCILER_URL is not a URL: '${baseUrl}'`);
  }
  if (env.OPS_TOKEN) return { baseUrl, token: env.OPS_TOKEN, subject: '(OPS_TOKEN)' };
  const { token, kid } = operatorToken(env);
  return { baseUrl, token, subject: `key ${kid}` };
}

/**
 * A new operator key pair (`ops keygen`): the private key goes to a file only its owner reads,
 * the ADMIN_KEYS entry to whoever deploys the services (docs/DEPLOY.md "Admin keys").
 */
export function operatorKeygen(operator: string, kid: string): { privateKeyPem: string; entry: string } {
  let generated;
  try {
    generated = generateOperatorKey(operator, kid);
  } catch (err) {
    throw new UsageError(`keygen: ${(err as Error).message.replace(/^entry 0( \(kid '[^']*'\))?:? ?/, '')}`);
  }
  return { privateKeyPem: generated.privateKeyPem, entry: JSON.stringify(generated.entry) };
}

export interface Client {
  baseUrl: string;
  get<T = unknown>(path: string): Promise<T>;
  /** `headers`: extra request headers (the erasure's Idempotency-Key). */
  post<T = unknown>(path: string, body: unknown, headers?: Record<string, string>): Promise<T>;
}

export function createClient(config: ClientConfig): Client {
  async function call<T>(
    method: string,
    path: string,
    body?: unknown,
    extraHeaders: Record<string, string> = {},
  ): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${config.baseUrl}${path}`, {
        method,
        headers: {
          ...extraHeaders,
          authorization: `Bearer ${config.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new ApiError(
        0,
        null,
        `cannot reach the reconciler at ${config.baseUrl} (${(err as Error).cause ? String((err as { cause: Error }).cause.message) : (err as Error).message}); is it running? RECONCILER_URL?`,
      );
    }
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    if (!res.ok) {
      const message = (parsed as { message?: string } | null)?.message ?? text.slice(0, 200);
      if (
        res.status === 404 &&
        (parsed as { code?: string } | null)?.code === undefined &&
        /Route .* not found/.test(message)
      ) {
        throw new ApiError(
          404,
          parsed,
          `the reconciler at ${config.baseUrl} does not serve ${method} ${path.split('?')[0]} (an older version?)`,
        );
      }
      throw new ApiError(res.status, parsed, `${method} ${path.split('?')[0]}: HTTP ${res.status}: ${message}`);
    }
    return parsed as T;
  }
  return { baseUrl: config.baseUrl, get: (p) => call('GET', p), post: (p, b, h) => call('POST', p, b, h) };
}
