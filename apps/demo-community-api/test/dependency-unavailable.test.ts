import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, databaseFaults, eventually, tcpProxy, type DatabaseFaults, type TcpProxy, type TestDatabase } from '@community/testing';
import type { DemoService } from '../src/service';
import { testService } from './helpers';

/**
 * Postgres unreachable or restarting is the server's moment, not a bug: the API answers
 * `503 DEPENDENCY_UNAVAILABLE` with `Retry-After` (the contract's error body), never a 500, and
 * answers 2xx again once the database is back. The service's pool reaches the test database through
 * a TCP proxy the test closes (connections cut, new ones refused: a restart or an unreachable
 * server), and the test also terminates the database's backends (pg_terminate_backend).
 */
let db: TestDatabase;
let proxy: TcpProxy;
let service: DemoService;
let faults: DatabaseFaults;

beforeAll(async () => {
  db = await createTestDatabase('demo_api_unavailable');
  const target = new URL(db.url);
  proxy = await tcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  await proxy.open();
  service = testService({ ...db, url: proxy.rewrite(db.url) });
  await service.app.ready();
  faults = await databaseFaults(db.url);
});

afterAll(async () => {
  await faults.close();
  await service.app.close();
  await proxy.close();
  await db.drop();
});

const createUser = (id: string) => service.app.inject({ method: 'POST', url: '/v1/users', payload: { id, email: `${id}@example.test`, displayName: 'Una Available' } });

it('answers 503 + Retry-After + the contract body while Postgres is unreachable, and 2xx after it is back', async () => {
  expect((await createUser('before')).statusCode).toBeLessThan(300);

  await proxy.close(); // pooled connections cut, new ones refused
  for (const id of ['during-1', 'during-2']) {
    const res = await createUser(id);
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
  await eventually('2xx once the database is back', async () => (await createUser('after')).statusCode < 300, 10_000, 100);
  const { rows } = await service.pool.query<{ id: string }>("SELECT id FROM community_users WHERE id IN ('before', 'during-1', 'during-2', 'after') ORDER BY id");
  expect(rows.map((r) => r.id)).toEqual(['after', 'before']);
});

it('answers 503, not 500, when its backend is terminated mid-request, and 2xx on the retry', async () => {
  // A request whose transaction is running when pg_terminate_backend ends it (57P01 or a cut socket).
  const statuses: number[] = [];
  const writer = (async () => {
    for (let i = 0; i < 200 && statuses.filter((s) => s === 503).length === 0; i++) {
      statuses.push((await createUser(`t-${i}`)).statusCode);
    }
  })();
  for (let i = 0; i < 40 && statuses.filter((s) => s === 503).length === 0; i++) {
    await faults.terminateAll();
    await sleep(20);
  }
  await writer;
  expect(statuses).toContain(503);
  expect(statuses.filter((s) => s !== 503 && s >= 300)).toEqual([]); // never a 500
  await eventually('2xx after the terminations', async () => (await createUser('t-after')).statusCode < 300, 10_000, 100);
});
