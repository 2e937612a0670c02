import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createVerifier } from 'fast-jwt';
import { DEV_PUSH_SERVICE_SIGNING_KEY, DEV_PUSH_SERVICE_VERIFY_KEY } from '@community/config';
import { ReadStateClient } from './read-state-client';

// The client against a local HTTP server standing in for notification-service: what it sends (the
// token's claims, the body) and how it fails. The real route: apps/notification-service/test/internal-read-state.test.ts.

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;
let server: Server;
let baseUrl: string;
let handler: Handler;
const open = new Set<ServerResponse>();

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      open.add(res);
      res.on('close', () => open.delete(res));
      handler(req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterEach(() => {
  for (const res of open) res.destroy();
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const client = (timeoutMs = 5_000) =>
  new ReadStateClient({ baseUrl, signingKey: DEV_PUSH_SERVICE_SIGNING_KEY, issuer: 'push-service', timeoutMs });
const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

it('POSTs the user and keys with a push-service token for notification-service, and answers the read subset', async () => {
  const verify = createVerifier({
    key: DEV_PUSH_SERVICE_VERIFY_KEY,
    algorithms: ['EdDSA'],
    allowedIss: 'push-service',
    allowedAud: 'notification-service',
  });
  const seen: Array<{ url?: string; method?: string; claims: Record<string, unknown>; body: unknown }> = [];
  handler = (req, body, res) => {
    seen.push({
      url: req.url,
      method: req.method,
      claims: verify(String(req.headers.authorization).replace(/^Bearer /, '')),
      body: JSON.parse(body),
    });
    // A key it did not ask about is not trusted into the answer.
    json(res, 200, { read: ['mention:c1:ana', 'mention:other:ana'] });
  };
  await expect(client().readKeys('ana', ['mention:c1:ana', 'mention:c2:ana'])).resolves.toEqual(
    new Set(['mention:c1:ana']),
  );
  expect(seen).toEqual([
    {
      url: '/v1/internal/read-state',
      method: 'POST',
      claims: expect.objectContaining({
        iss: 'push-service',
        sub: 'push-service',
        aud: 'notification-service',
        scope: 'notifications:read-state',
      }),
      body: { userId: 'ana', idempotencyKeys: ['mention:c1:ana', 'mention:c2:ana'] },
    },
  ]);
});

it('rejects naming the status on any non-2xx answer', async () => {
  handler = (_req, _body, res) => json(res, 503, { code: 'DEPENDENCY_UNAVAILABLE' });
  await expect(client().readKeys('ana', ['k'])).rejects.toThrow(
    /^read-state of ana: HTTP 503 .*DEPENDENCY_UNAVAILABLE/,
  );
});

it('rejects on a body without read: string[]', async () => {
  handler = (_req, _body, res) => json(res, 200, { read: [1] });
  await expect(client().readKeys('ana', ['k'])).rejects.toThrow(/HTTP 200 but the body has no read: string\[\]/);
  handler = (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{not json');
  };
  await expect(client().readKeys('ana', ['k'])).rejects.toThrow(/^read-state of ana: /);
});

it('rejects naming the timeout when no answer comes in time', async () => {
  handler = () => undefined; // never answers
  await expect(client(50).readKeys('ana', ['k'])).rejects.toThrow('read-state of ana: timeout after 50 ms');
});

it('rejects when notification-service cannot be reached', async () => {
  const unreachable = new ReadStateClient({
    baseUrl: 'http://127.0.0.1:1',
    signingKey: DEV_PUSH_SERVICE_SIGNING_KEY,
    issuer: 'push-service',
    timeoutMs: 5_000,
  });
  await expect(unreachable.readKeys('ana', ['k'])).rejects.toThrow(/^read-state of ana: /);
});

it('refuses 0 or more than 100 keys, a bad key or a bad timeout before any request', async () => {
  let calls = 0;
  handler = (_req, _body, res) => {
    calls += 1;
    json(res, 200, { read: [] });
  };
  await expect(client().readKeys('ana', [])).rejects.toThrow('1..100 idempotency keys per call, got 0');
  await expect(
    client().readKeys(
      'ana',
      Array.from({ length: 101 }, (_, i) => `k${i}`),
    ),
  ).rejects.toThrow('got 101');
  expect(calls).toBe(0);
  expect(() => new ReadStateClient({ baseUrl, signingKey: 'nope', issuer: 'push-service', timeoutMs: 1000 })).toThrow(
    /not a PEM PKCS#8 private key/,
  );
  expect(
    () =>
      new ReadStateClient({ baseUrl, signingKey: DEV_PUSH_SERVICE_SIGNING_KEY, issuer: 'push-service', timeoutMs: 0 }),
  ).toThrow(/timeoutMs must be a positive integer/);
});
