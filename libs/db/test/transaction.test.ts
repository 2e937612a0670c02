// withTransaction, the pool's error handling and SQLSTATE helpers against a private migrated database.
import type { Pool, PoolClient } from 'pg';
import pino from 'pino';
import { createTestDatabase, eventually, type TestDatabase } from '@community/testing';
import { createPgPool, isUniqueViolation, sqlState, withTransaction } from '../src/index';

let db: TestDatabase;
let pool: Pool;
let admin: Pool;

beforeAll(async () => {
  db = await createTestDatabase('db_transaction');
  pool = createPgPool(db.url, { max: 4 });
  admin = createPgPool(db.url, { max: 1 });
  await pool.query('CREATE TABLE effects (k text CONSTRAINT effects_k_key UNIQUE)');
});

afterAll(async () => {
  await pool.end();
  await admin.end();
  await db.drop();
});

const count = async (k: string) =>
  Number((await pool.query('SELECT count(*) FROM effects WHERE k = $1', [k])).rows[0].count);
const insert = (k: string) => async (tx: PoolClient) => {
  await tx.query('INSERT INTO effects (k) VALUES ($1)', [k]);
  return k;
};
const backendPid = async (c: PoolClient) =>
  (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
/** Terminates one backend of this test's own database, from another connection, and waits until it is gone. */
async function terminate(pid: number): Promise<void> {
  await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  await eventually(
    `backend ${pid} gone`,
    async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0,
    5000,
    20,
  );
}

it('commits what fn did and returns its result; rolls everything back when fn throws', async () => {
  expect(await withTransaction(pool, insert('committed'))).toBe('committed');
  await expect(
    withTransaction(pool, async (tx) => {
      await insert('rolled-back')(tx);
      throw new Error('fails after a write');
    }),
  ).rejects.toThrow('fails after a write');
  expect([await count('committed'), await count('rolled-back')]).toEqual([1, 0]);
});

it('opens the transaction with the isolation level and read-only mode asked for', async () => {
  const settings = (tx: PoolClient) =>
    tx
      .query("SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro")
      .then((r) => r.rows[0]);
  expect(await withTransaction(pool, settings)).toEqual({ iso: 'read committed', ro: 'off' });
  expect(await withTransaction(pool, { isolation: 'repeatable read', readOnly: true }, settings)).toEqual({
    iso: 'repeatable read',
    ro: 'on',
  });
  expect(await withTransaction(pool, { isolation: 'serializable' }, settings)).toEqual({
    iso: 'serializable',
    ro: 'off',
  });
  const refused = await withTransaction(pool, { readOnly: true }, insert('read-only')).catch((e: unknown) => e);
  expect(sqlState(refused)).toBe('25006'); // read_only_sql_transaction
});

it('gives a repeatable-read transaction one snapshot for all its statements', async () => {
  const seen = await withTransaction(pool, { isolation: 'repeatable read', readOnly: true }, async (tx) => {
    const before = Number((await tx.query('SELECT count(*) FROM effects')).rows[0].count);
    await pool.query("INSERT INTO effects VALUES ('committed-meanwhile')"); // another connection, committed at once
    const after = Number((await tx.query('SELECT count(*) FROM effects')).rows[0].count);
    return { before, after };
  });
  expect(seen.after).toBe(seen.before);
  expect(await count('committed-meanwhile')).toBe(1);
});

it('commits asynchronously only when asked, and only that transaction', async () => {
  const single = createPgPool(db.url, { max: 1 }); // one connection: the setting must not leak to the next user
  try {
    const show = async (tx: PoolClient) =>
      (await tx.query('SHOW synchronous_commit')).rows[0].synchronous_commit as string;
    expect(await withTransaction(single, { synchronousCommit: false }, show)).toBe('off');
    expect(await withTransaction(single, show)).toBe('on');
    await withTransaction(single, { synchronousCommit: false }, insert('async-1'));
    expect(await count('async-1')).toBe(1);
  } finally {
    await single.end();
  }
});

it('recognises unique violations by SQLSTATE and constraint name', async () => {
  await pool.query("INSERT INTO effects VALUES ('dup')");
  const err = await pool.query("INSERT INTO effects VALUES ('dup')").catch((e: unknown) => e);
  expect(isUniqueViolation(err)).toBe(true);
  expect(isUniqueViolation(err, 'effects_k_key')).toBe(true);
  expect(isUniqueViolation(err, 'other')).toBe(false);
});

describe('a connection that dies', () => {
  it('while checked out between two queries: no crash, the caller gets the error, the client is destroyed', async () => {
    const single = createPgPool(db.url, { max: 1 });
    try {
      let pid = 0;
      const failed = await withTransaction(single, async (tx) => {
        pid = await backendPid(tx);
        await tx.query("INSERT INTO effects VALUES ('lost-with-its-connection')");
        // The server closes the connection while nothing is in flight: pg emits 'error' on the client,
        // which crashes the process unless someone listens.
        await terminate(pid);
        await tx.query('SELECT 1');
      }).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(Error);
      expect(single.totalCount).toBe(0); // destroyed, not handed to the next caller
      expect(await count('lost-with-its-connection')).toBe(0);
      // The pool opens a fresh connection for the next transaction.
      const next = await withTransaction(single, backendPid);
      expect(next).not.toBe(pid);
    } finally {
      await single.end();
    }
  });

  it('while idle in the pool: the pool drops it and serves the next query from a new connection', async () => {
    const warnings: string[] = [];
    const single = createPgPool(db.url, {
      max: 1,
      logger: pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) }),
    });
    try {
      const pid = (await single.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      await terminate(pid);
      await eventually('idle client dropped', () => single.totalCount === 0, 5000, 20);
      expect(warnings).toHaveLength(1);
      expect(JSON.parse(warnings[0])).toMatchObject({ level: 40, err: { code: '57P01' } }); // admin_shutdown
      expect((await single.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid).not.toBe(pid);
    } finally {
      await single.end();
    }
  });
});

describe('a signal (the caller deadline)', () => {
  /** Transactions of this test's database that are still open, seen from another connection. */
  const openTransactions = async () =>
    Number(
      (
        await admin.query(
          'SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid()',
        )
      ).rows[0].count,
    );

  it('cancels the running statement, commits nothing, and returns only once the transaction has ended', async () => {
    const single = createPgPool(db.url, { max: 1 }); // exhausted while the statement runs: the cancel needs no pooled connection
    try {
      const deadline = new AbortController();
      const reason = new Error('deadline passed');
      // Ten minutes: only the cancel can end it within the test (no statement timeout is set).
      const slow = 'SELECT pg_sleep(600) /* deadline-test */';
      let statementError: unknown;
      const running = withTransaction(single, { signal: deadline.signal }, async (tx) => {
        await tx.query("INSERT INTO effects VALUES ('slow-write')");
        await tx.query(slow).catch((err: unknown) => {
          statementError = err;
          throw err;
        });
      }).catch((e: unknown) => e);
      // The deadline passes while the statement runs on the server.
      await eventually(
        'the slow statement running',
        async () =>
          (await admin.query("SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query = $1", [slow]))
            .rowCount === 1,
        15_000,
        20,
      );
      deadline.abort(reason);
      const failed = await running;
      const open = await openTransactions();
      expect(failed).toBe(reason);
      // Postgres itself ended the statement, on the cancel request (57014, "due to user request";
      // a statement timeout would say so instead).
      expect(sqlState(statementError)).toBe('57014');
      expect((statementError as Error).message).toBe('canceling statement due to user request');
      expect(open).toBe(0);
      expect(await count('slow-write')).toBe(0);
      expect(await withTransaction(single, async (tx) => (await tx.query('SELECT 1 AS one')).rows[0].one)).toBe(1); // the pool goes on
    } finally {
      await single.end();
    }
  });

  it('never commits after the abort, even when fn ignored it and finished', async () => {
    const deadline = new AbortController();
    const failed = await withTransaction(pool, { signal: deadline.signal }, async (tx) => {
      await tx.query("INSERT INTO effects VALUES ('finished-late')");
      deadline.abort(new Error('deadline passed while idle in transaction'));
      return 'done';
    }).catch((e: unknown) => e);
    expect(failed).toEqual(new Error('deadline passed while idle in transaction'));
    expect(await count('finished-late')).toBe(0);
  });

  it('already aborted: nothing is checked out, fn never runs', async () => {
    const fn = jest.fn(insert('never'));
    const idleBefore = pool.idleCount + pool.totalCount;
    await expect(withTransaction(pool, { signal: AbortSignal.abort(new Error('too late')) }, fn)).rejects.toThrow(
      'too late',
    );
    expect(fn).not.toHaveBeenCalled();
    expect(pool.idleCount + pool.totalCount).toBe(idleBefore);
  });

  it('statementTimeoutMs ends a long statement on the server, for that transaction only', async () => {
    const single = createPgPool(db.url, { max: 1 });
    try {
      const failed = await withTransaction(single, { statementTimeoutMs: 100 }, (tx) =>
        tx.query('SELECT pg_sleep(5)'),
      ).catch((e: unknown) => e);
      expect(sqlState(failed)).toBe('57014'); // query_canceled
      expect(
        await withTransaction(
          single,
          async (tx) => (await tx.query('SHOW statement_timeout')).rows[0].statement_timeout,
        ),
      ).toBe('0');
    } finally {
      await single.end();
    }
  });
});
