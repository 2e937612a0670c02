import pg from 'pg';
import { eventually } from '@community/testing';
import { createInfra, startService, testConfig, type Infra, type StartedService } from './support/harness';
import { TestSmtp } from './support/smtp';

// /readyz and the database: a real fault on this file's own database only (its backends
// terminated and new connections refused), never on the shared Postgres server.
let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;
let admin: pg.Client;

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

beforeAll(async () => {
  infra = await createInfra('email_ready');
  smtp = await new TestSmtp().start();
  s = await startService(testConfig(infra, smtp));
  const url = new URL(infra.db.url);
  url.pathname = '/postgres';
  admin = new pg.Client({ connectionString: url.toString() });
  admin.on('error', () => undefined);
  await admin.connect();
});

afterAll(async () => {
  await admin?.query(`ALTER DATABASE ${quote(infra.db.name)} ALLOW_CONNECTIONS true`).catch(() => undefined);
  await admin?.end();
  await s?.svc.stop();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

const readyz = async () => {
  const res = await s.svc.app.inject({ method: 'GET', url: '/readyz' });
  return { status: res.statusCode, body: res.json() as { status: string; checks: Record<string, boolean> } };
};

it('/readyz names the database while it is unreachable, and returns to 200 by itself afterwards', async () => {
  expect(await readyz()).toMatchObject({
    status: 200,
    body: { checks: { database: true, amqp: true, consumers: true } },
  });

  // The database goes away: every backend of the service is terminated and no new one is allowed.
  await admin.query(`ALTER DATABASE ${quote(infra.db.name)} ALLOW_CONNECTIONS false`);
  await admin.query(
    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [infra.db.name],
  );
  const down = await eventually('readyz reports the database down', async () => {
    const r = await readyz();
    return r.status === 503 ? r : undefined;
  });
  expect(down.body).toMatchObject({
    status: 'not_ready',
    checks: { database: false, amqp: true, consumers: true, accepting: true },
  });

  // It comes back: nobody touches the service, and readiness recovers on its own.
  await admin.query(`ALTER DATABASE ${quote(infra.db.name)} ALLOW_CONNECTIONS true`);
  const up = await eventually('readyz back to 200', async () => {
    const r = await readyz();
    return r.status === 200 ? r : undefined;
  });
  expect(up.body.checks).toMatchObject({ database: true, amqp: true, consumers: true });
});
