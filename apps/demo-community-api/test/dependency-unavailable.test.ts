import pg from 'pg';
import {
  createTestDatabase,
  databaseFaults,
  eventually,
  tcpProxy,
  type DatabaseFaults,
  type TcpProxy,
  type TestDatabase,
} from '@community/testing';
import { SERVICE_NAME } from '../src/config';
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

const createUser = (id: string, displayName = 'Una Available') =>
  service.app.inject({
    method: 'POST',
    url: '/v1/users',
    payload: { id, email: `${id}@example.test`, displayName },
  });

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
  await eventually(
    '2xx once the database is back',
    async () => (await createUser('after')).statusCode < 300,
    30_000,
    100,
  );
  const { rows } = await service.pool.query<{ id: string }>(
    "SELECT id FROM community_users WHERE id IN ('before', 'during-1', 'during-2', 'after') ORDER BY id",
  );
  expect(rows.map((r) => r.id)).toEqual(['after', 'before']);
});

it('answers 503, not 500, when its backend is terminated mid-request, and 2xx on the retry', async () => {
  // A request whose transaction is provably running when pg_terminate_backend ends it: the test
  // holds the user's row, so the request's upsert waits on that lock inside its transaction, and the
  // backend that waits is the one terminated (57P01). No luck with timing needed.
  expect((await createUser('t-held')).statusCode).toBeLessThan(300);
  const connect = async (name: string) => {
    const c = new pg.Client({ connectionString: db.url, application_name: name });
    c.on('error', () => undefined);
    await c.connect();
    return c;
  };
  // The observer asks outside any transaction: inside one, pg_stat_activity is a snapshot that
  // would not change between polls.
  const [holder, observer] = await Promise.all([connect('test-lock-holder'), connect('test-observer')]);
  try {
    await holder.query('BEGIN');
    expect((await holder.query("SELECT 1 FROM community_users WHERE id = 't-held' FOR UPDATE")).rowCount).toBe(1);
    const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    // Another profile than the first request's: an identical one would be answered from its
    // fingerprint (producer-side dedup) without reaching the row.
    const response = createUser('t-held', 'Una Held');
    const waiting = await eventually(
      'the request waiting on the held row, inside its transaction',
      async () => {
        const { rows } = await observer.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = $1 AND xact_start IS NOT NULL
           AND wait_event_type = 'Lock' AND $2 = ANY (pg_blocking_pids(pid))`,
          [SERVICE_NAME, holderPid],
        );
        return rows[0]?.pid;
      },
      30_000,
      50,
    );
    expect((await observer.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [waiting])).rows[0].ok).toBe(
      true,
    );
    const res = await response;
    expect(res.statusCode).toBe(503); // never a 500
    expect(res.json()).toMatchObject({ code: 'DEPENDENCY_UNAVAILABLE' });
    await holder.query('ROLLBACK');
  } finally {
    await Promise.all([holder.end(), observer.end()]);
  }
  // The failed request left no request key: its retry writes.
  await eventually(
    '2xx on the retry',
    async () => (await createUser('t-held', 'Una Held')).statusCode < 300,
    30_000,
    100,
  );
});
