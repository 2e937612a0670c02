import type { Canaries } from './canaries';
import type { Rng } from './random';
import { APP_NAMES, type AppName, type BadRequest, type RequestContext } from './request-types';

/**
 * Requests sent byte for byte: what fetch refuses to send (CR/LF and NUL in headers, raw bytes in
 * the path, conflicting lengths, obs-fold, oversized headers). Node's parser must refuse them with
 * a 4xx, and one it accepts must still be refused by the app.
 */
export function rawRequest(
  rng: Rng,
  canaries: Canaries,
  ctx: RequestContext,
): Omit<BadRequest, 'n' | 'app'> & { app: AppName } {
  const app = rng.pick<AppName>(APP_NAMES);
  // Unauthenticated targets, so that even a request the parser accepts is a 4xx.
  const target = {
    notifications: `/v1/users/${ctx.owner}/notifications`,
    email: '/v1/unsubscribe',
    api: '/v1/posts',
    feed: `/v1/users/${ctx.owner}/feed`,
    push: `/v1/users/${ctx.owner}/push-subscriptions`,
    reconciler: '/v1/admin/status',
  }[app];
  // push-service's route serves no GET (404 before any guard): POST, which its guard refuses.
  const method = app === 'api' || app === 'push' ? 'POST' : 'GET';
  const [kind, head] = rng.pick<[string, () => string]>([
    [
      'crlf-header-injection',
      () => `${method} ${target} HTTP/1.1\r\nHost: x\r\nX-Correlation-Id: a\r\nSet-Cookie: pwned=1\r\n`,
    ],
    ['nul-in-header', () => `${method} ${target} HTTP/1.1\r\nHost: x\r\nX-User-Id: a\u0000b\r\n`],
    ['bare-lf-in-header', () => `${method} ${target} HTTP/1.1\r\nHost: x\r\nX-User-Id: a\nInjected: 1\r\n`],
    ['bare-cr-in-header', () => `${method} ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\rb\r\n`],
    ['obs-fold', () => `${method} ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\r\n ${canaries.token()}\r\n`],
    ['raw-bytes-in-path', () => `GET ${target}/\u00ff\u0000 HTTP/1.1\r\nHost: x\r\n`],
    ['space-in-path', () => `GET ${target}/a b HTTP/1.1\r\nHost: x\r\n`],
    ['bad-method', () => `G\u0000T ${target} HTTP/1.1\r\nHost: x\r\n`],
    ['no-host', () => `GET ${target} HTTP/1.1\r\n`],
    ['bad-version', () => `GET ${target} HTTP/9.9\r\nHost: x\r\n`],
    ['conflicting-length', () => `POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 5\r\n`],
    ['te-and-cl', () => `POST ${target} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n`],
    [
      'bad-chunk',
      () =>
        `POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0`,
    ],
    ['huge-header', () => `GET ${target} HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(rng.int(17_000, 40_000))}\r\n`],
    ['invalid-header-name', () => `GET ${target} HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n`],
    ['canary-header-name', () => `GET ${target} HTTP/1.1\r\nHost: x\r\n${canaries.token()}@: 1\r\n`],
  ]);
  let text = head();
  if (!text.endsWith('0')) text += 'Connection: close\r\n\r\n';
  else text += '\r\n\r\n';
  return { app, category: `raw:${kind}`, method, path: target, headers: {}, raw: Buffer.from(text, 'latin1') };
}
