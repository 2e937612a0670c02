import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** An empty database of its own for one test file (the batch test only needs one table). */
export async function createScratchDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  // Same server and user as DATABASE_URL; CREATE/DROP DATABASE run from the `postgres` database.
  const server = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/community');
  const adminUrl = Object.assign(new URL(server), { pathname: '/postgres' }).toString();
  // With the owner pid, as libs/testing's testResourceName (see support/broker.ts).
  const name = `test_${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = async <T>(work: (c: Client) => Promise<T>): Promise<T> => {
    const c = new Client({ connectionString: adminUrl });
    await c.connect();
    try {
      return await work(c);
    } finally {
      await c.end();
    }
  };
  await admin((c) => c.query(`CREATE DATABASE "${name}"`));
  return {
    url: Object.assign(new URL(server), { pathname: `/${name}` }).toString(),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}
