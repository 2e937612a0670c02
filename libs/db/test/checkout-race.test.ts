// A backend terminated right after its startup, with Postgres's ReadyForQuery and FATAL arriving in
// one TCP chunk: pg-pool hands the new client out from inside that chunk's parse, and the FATAL is
// parsed before any awaiting code runs. withTransaction and the scheduler's JobLock must already be
// listening then (libs/db/src/pool.ts, checkOutGuarded); an unheard 'error' crashes the process.
// This is what made demo-community-api exit during the fault suite's pg_terminate_backend ×5.
import { once } from 'node:events';
import net from 'node:net';
import pg from 'pg';
import { createTestDatabase, eventually, type TestDatabase } from '@community/testing';
import { createPgPool, withTransaction } from '../src/index';
import { JobLock } from '../src/scheduler/lock';

let db: TestDatabase;
let admin: pg.Pool;
let proxy: HoldingProxy;

/**
 * Forwards client → server at once, but keeps server → client bytes until `release()`, then writes
 * them as one chunk: the way two messages sent a moment apart can reach the client in one read.
 */
interface HoldingProxy {
  url: string;
  holding: boolean;
  /** The server closed a held connection (its last bytes, the FATAL among them, are held). */
  upstreamEnded(): boolean;
  /** Every connection the proxy served is closed on the client's side too. */
  clientsClosed(): boolean;
  release(): void;
  close(): Promise<void>;
}

async function holdingProxy(targetUrl: string): Promise<HoldingProxy> {
  const target = new URL(targetUrl);
  const held: Array<{ to: net.Socket; bytes: Buffer[]; ended: boolean }> = [];
  const clients: Array<{ closed: boolean }> = [];
  const sockets = new Set<net.Socket>();
  const state = { holding: false };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    const entry = { to: client, bytes: [] as Buffer[], ended: false };
    held.push(entry);
    const seen = { closed: false };
    clients.push(seen);
    client.on('close', () => (seen.closed = true));
    client.on('data', (b: Buffer) => upstream.write(b));
    client.on('close', () => upstream.destroy());
    upstream.on('data', (b: Buffer) => (state.holding ? entry.bytes.push(b) : client.write(b)));
    upstream.on('close', () => (state.holding ? (entry.ended = true) : client.destroy()));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    get holding() {
      return state.holding;
    },
    set holding(v: boolean) {
      state.holding = v;
    },
    upstreamEnded: () => held.some((e) => e.ended),
    clientsClosed: () => clients.every((c) => c.closed),
    release() {
      state.holding = false;
      for (const e of held.splice(0)) {
        if (e.bytes.length > 0) e.to.write(Buffer.concat(e.bytes));
        if (e.ended) e.to.end();
      }
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

beforeAll(async () => {
  db = await createTestDatabase('db_checkout_race');
  admin = createPgPool(db.url, { max: 1 });
  proxy = await holdingProxy(db.url);
});

afterAll(async () => {
  await proxy.close();
  await admin.end();
  await db.drop();
});

/**
 * Opens a new pooled connection through the proxy with Postgres's replies held back, terminates
 * its backend once the startup is done (ReadyForQuery and then the FATAL wait in the proxy), and
 * delivers both in one chunk while `checkOut` is waiting for the connection.
 */
async function terminatedRightAfterStartup<T>(
  applicationName: string,
  checkOut: (pool: pg.Pool) => Promise<T>,
): Promise<PromiseSettledResult<T>> {
  const pool = createPgPool(proxy.url, { max: 1, applicationName });
  const unheard: unknown[] = [];
  const onUncaught = (err: unknown) => unheard.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    proxy.holding = true;
    const settled = checkOut(pool).then(
      (value): PromiseSettledResult<T> => ({ status: 'fulfilled', value }),
      (reason: unknown): PromiseSettledResult<T> => ({ status: 'rejected', reason }),
    );
    // Startup done on the server (the backend is idle, waiting for its first query)...
    const pid = await eventually(
      `${applicationName} backend idle`,
      async () => {
        const { rows } = await admin.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle'",
          [applicationName],
        );
        return rows[0]?.pid;
      },
      5000,
      10,
    );
    // ...then terminated: its FATAL ErrorResponse and the close queue up behind the ReadyForQuery.
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await eventually(
      'backend gone',
      async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0,
      5000,
      10,
    );
    // The FATAL and the close have reached the proxy: released now, they arrive in one chunk.
    await eventually('the server closed the connection', () => proxy.upstreamEnded(), 5000, 5);
    proxy.release();
    const result = await settled;
    // The client has seen the socket's end (after the chunk) and handled whatever it emits for it.
    await eventually('the client closed its socket', () => proxy.clientsClosed(), 5000, 5);
    await new Promise((r) => setImmediate(r));
    expect(unheard).toEqual([]);
    return result;
  } finally {
    proxy.holding = false;
    process.removeListener('uncaughtException', onUncaught);
    await pool.end().catch(() => undefined);
  }
}

it('withTransaction: a connection terminated in the chunk that completes its startup fails the transaction, not the process', async () => {
  const result = await terminatedRightAfterStartup('race-transaction', (pool) =>
    withTransaction(pool, async (tx) => (await tx.query('SELECT 1 AS one')).rows[0]),
  );
  // The caller is told (a database error it can classify as unavailable); nothing is thrown elsewhere.
  expect(result.status).toBe('rejected');
});

it("the scheduler's job lock: the same race fails that attempt to lock, not the process", async () => {
  const result = await terminatedRightAfterStartup('race-job-lock', (pool) => JobLock.tryAcquire(pool, '4242'));
  expect(result.status).toBe('rejected');
});
