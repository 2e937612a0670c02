import { DEV_UNSUBSCRIBE_TOKEN_SECRET } from '@community/config';
import {
  createTestDatabase,
  eventually,
  tcpProxy,
  testLogger,
  type TcpProxy,
  type TestDatabase,
} from '@community/testing';
import { Registry } from 'prom-client';
import { loadEmailConfig } from '../src/config';
import { createEmailService, type EmailService } from '../src/service';
import { UnsubscribeTokens } from '../src/unsubscribe/token';

/**
 * The unsubscribe endpoint while Postgres is unreachable: `503 DEPENDENCY_UNAVAILABLE` with
 * `Retry-After` (the mail client or the user retries), never a 500; recorded once it is back. The
 * pool reaches the test database through a TCP proxy the test closes. The service is built, not
 * started: the HTTP surface needs no broker.
 */
let db: TestDatabase;
let proxy: TcpProxy;
let svc: EmailService;

beforeAll(async () => {
  db = await createTestDatabase('email_unavailable');
  const target = new URL(db.url);
  proxy = await tcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  await proxy.open();
  const config = loadEmailConfig({
    DATABASE_URL: proxy.rewrite(db.url),
    PORT: '0',
    LOG_LEVEL: 'silent',
    NOTIFICATION_SERVICE_URL: 'http://127.0.0.1:9',
  });
  svc = createEmailService(config, {
    logger: testLogger('email-unavailable'),
    registry: new Registry(),
    runTicker: false,
  });
  await svc.app.ready();
});

afterAll(async () => {
  await svc.app.close();
  await proxy.close();
  await db.drop();
});

it('answers a one-click unsubscribe 503 + Retry-After while Postgres is unreachable, and records it after', async () => {
  const token = new UnsubscribeTokens(DEV_UNSUBSCRIBE_TOKEN_SECRET).sign({ userId: 'erin', scope: 'mention' });
  const oneClick = () =>
    svc.app.inject({
      method: 'POST',
      url: `/v1/unsubscribe?token=${encodeURIComponent(token)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'List-Unsubscribe=One-Click',
    });

  await proxy.close();
  const res = await oneClick();
  expect(res.statusCode).toBe(503);
  expect(res.headers['retry-after']).toBe('5');
  expect(res.json()).toEqual({
    statusCode: 503,
    code: 'DEPENDENCY_UNAVAILABLE',
    error: 'Service Unavailable',
    message: 'database is unavailable for the moment; retry after 5 s',
  });

  await proxy.open();
  await eventually('2xx once the database is back', async () => (await oneClick()).statusCode < 300, 10_000, 100);
  expect((await svc.pool.query(`SELECT 1 FROM email_suppressions WHERE user_id = 'erin'`)).rowCount).toBe(1);
});
