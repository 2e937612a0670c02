import { createHmac } from 'node:crypto';
import { userInfo } from 'node:os';
import { DEV_JWT_SECRET } from '@community/config';

/**
 * How the ops CLI talks to the reconciler: its admin HTTP API, with a bearer token.
 * RECONCILER_URL (default http://127.0.0.1:3004); OPS_TOKEN, or a token minted here from
 * JWT_SECRET (the operator holds the services' secret; the development default, like the services,
 * only outside NODE_ENV=production).
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

const b64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

/**
 * HS256 JWT, written out (nine lines) rather than pulling a JWT library into the CLI: the services
 * verify with @fastify/jwt, whose signer is a plugin needing a fastify instance.
 */
export function signAdminToken(secret: string, sub: string, ttlSeconds = 900, now = Math.floor(Date.now() / 1000)): string {
  const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const payload = b64url(JSON.stringify({ sub, scope: 'admin', iat: now, exp: now + ttlSeconds }));
  const signature = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${signature}`;
}

export interface ClientConfig {
  baseUrl: string;
  token: string;
  /** Who the actions are recorded as (the token's subject). */
  subject: string;
}

export function clientConfig(env: NodeJS.ProcessEnv = process.env): ClientConfig {
  const baseUrl = (env.RECONCILER_URL || 'http://127.0.0.1:3004').replace(/\/+$/, '');
  try {
    new URL(baseUrl);
  } catch {
    throw new UsageError(`RECONCILER_URL is not a URL: '${baseUrl}'`);
  }
  if (env.OPS_TOKEN) return { baseUrl, token: env.OPS_TOKEN, subject: '(OPS_TOKEN)' };
  const secret = env.JWT_SECRET || (env.NODE_ENV === 'production' ? undefined : DEV_JWT_SECRET);
  if (!secret) throw new UsageError('set OPS_TOKEN (an admin token) or JWT_SECRET (the services\' secret, to mint one); NODE_ENV=production has no default');
  const subject = env.OPS_USER || `ops:${safeUser()}`;
  return { baseUrl, token: signAdminToken(secret, subject), subject };
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

export interface Client {
  baseUrl: string;
  get<T = unknown>(path: string): Promise<T>;
  post<T = unknown>(path: string, body: unknown): Promise<T>;
}

export function createClient(config: ClientConfig): Client {
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${config.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${config.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new ApiError(0, null, `cannot reach the reconciler at ${config.baseUrl} (${(err as Error).cause ? String((err as { cause: Error }).cause.message) : (err as Error).message}); is it running? RECONCILER_URL?`);
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
      if (res.status === 404 && (parsed as { code?: string } | null)?.code === undefined && /Route .* not found/.test(message)) {
        throw new ApiError(404, parsed, `the reconciler at ${config.baseUrl} does not serve ${method} ${path.split('?')[0]} (an older version?)`);
      }
      throw new ApiError(res.status, parsed, `${method} ${path.split('?')[0]}: HTTP ${res.status}: ${message}`);
    }
    return parsed as T;
  }
  return { baseUrl: config.baseUrl, get: (p) => call('GET', p), post: (p, b) => call('POST', p, b) };
}
