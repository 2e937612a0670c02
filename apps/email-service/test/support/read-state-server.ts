import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createVerifier } from 'fast-jwt';
import { DEV_EMAIL_SERVICE_VERIFY_KEY } from '@community/config';

/**
 * A stand-in for notification-service's `POST /v1/internal/read-state` (docs/NOTIFICATIONS.md
 * "Delivery timing"): {userId, idempotencyKeys} → {read: string[]}, only with email-service's
 * service token (EdDSA, its public key, iss email-service, aud notification-service, scope
 * notifications:read-state, unexpired: 401 otherwise), 400 for a malformed body. `read` holds the
 * keys read in the app; `mode` makes it fail (503) or never answer (a timeout).
 */
export class ReadStateServer {
  readonly read = new Set<string>();
  readonly requests: Array<{ userId: string; idempotencyKeys: string[] }> = [];
  rejected = 0;
  mode: 'up' | 'down' | 'hang' = 'up';
  private readonly server = http.createServer((req, res) => this.handle(req, res));
  private readonly verify = createVerifier({
    key: DEV_EMAIL_SERVICE_VERIFY_KEY,
    algorithms: ['EdDSA'],
    allowedIss: 'email-service',
    allowedAud: 'notification-service',
    requiredClaims: ['exp'],
  });

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private authorized(header: string | undefined): boolean {
    try {
      const claims = this.verify((header ?? '').replace(/^Bearer /, '')) as { scope?: string };
      return String(claims.scope).split(' ').includes('notifications:read-state');
    } catch {
      return false;
    }
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/internal/read-state') return void res.writeHead(404).end();
      if (!this.authorized(req.headers.authorization)) {
        this.rejected += 1;
        return void res.writeHead(401).end('{"message":"service token required"}');
      }
      let body: { userId?: unknown; idempotencyKeys?: unknown };
      try {
        body = JSON.parse(raw) as typeof body;
      } catch {
        return void res.writeHead(400).end('{"message":"not JSON"}');
      }
      const keys = body.idempotencyKeys;
      if (
        typeof body.userId !== 'string' ||
        !Array.isArray(keys) ||
        keys.length < 1 ||
        keys.length > 100 ||
        !keys.every((k) => typeof k === 'string')
      )
        return void res.writeHead(400).end('{"message":"expected userId and 1..100 idempotencyKeys"}');
      this.requests.push({ userId: body.userId, idempotencyKeys: keys as string[] });
      if (this.mode === 'hang') return;
      if (this.mode === 'down') return void res.writeHead(503).end('{"message":"unavailable"}');
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ read: (keys as string[]).filter((k) => this.read.has(k)) }));
    });
  }
}
