import { Registry } from 'prom-client';
import {
  createTestDatabase,
  tcpProxy,
  eventually,
  testLogger,
  type TcpProxy,
  type TestDatabase,
} from '@community/testing';
import { createNotificationService, type NotificationService } from '../src/service';
import { testConfig } from './harness';

/**
 * Postgres unreachable or restarting is the server's moment, not a bug: the HTTP API answers
 * `503 DEPENDENCY_UNAVAILABLE` with `Retry-After` and the contract's error body, never a 500, and
 * 2xx again once the database is back. The service's pool reaches its test database through a TCP
 * proxy the test closes (pooled connections cut, new ones refused).
 */
let db: TestDatabase;
let proxy: TcpProxy;
let service: NotificationService;

beforeAll(async () => {
  db = await createTestDatabase('ns_unavailable');
  const target = new URL(db.url);
  proxy = await tcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  await proxy.open();
  service = createNotificationService(testConfig({ ...db, url: proxy.rewrite(db.url) }, undefined), {
    logger: testLogger('unavailable'),
    registry: new Registry(),
    messaging: false,
  });
  await service.app.ready();
});

afterAll(async () => {
  await service.app.close();
  await proxy.close();
  await db.drop();
});

const bearer = () => ({ authorization: `Bearer ${service.app.jwt.sign({ sub: 'ana' })}` });
const list = () => service.app.inject({ url: '/v1/users/ana/notifications', headers: bearer() });
const optOut = () =>
  service.app.inject({
    method: 'PUT',
    url: '/v1/users/ana/preferences',
    headers: bearer(),
    payload: { preferences: { mention: { email: 'off' } } },
  });

it('answers 503 + Retry-After + the contract body on reads and writes while Postgres is unreachable, 2xx after', async () => {
  expect((await list()).statusCode).toBe(200);

  await proxy.close();
  for (const res of [
    await list(),
    await optOut(),
    await service.app.inject({ url: '/v1/users/ana/notifications/unread-count', headers: bearer() }),
  ]) {
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.json()).toEqual({
      statusCode: 503,
      code: 'DEPENDENCY_UNAVAILABLE',
      error: 'Service Unavailable',
      message: 'database is unavailable for the moment; retry after 5 s',
    });
  }

  await proxy.open();
  await eventually('reads 2xx once the database is back', async () => (await list()).statusCode === 200, 10_000, 100);
  expect((await optOut()).statusCode).toBe(200);
  const prefs = await service.app.inject({ url: '/v1/users/ana/preferences', headers: bearer() });
  expect(prefs.json().preferences.mention.email).toBe('off');
});
