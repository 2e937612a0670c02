import pg from 'pg';

/**
 * Database faults a test injects into its OWN database only (never the server: other tests share
 * it): every backend of the database terminated, and new connections refused for a while. The
 * connection used to inject them goes to the `postgres` maintenance database, so it survives both.
 */
export interface DatabaseFaults {
  /** pg_terminate_backend on every connection to the database; resolves with how many there were. */
  terminateAll(): Promise<number>;
  /** Refuses new connections (ALLOW_CONNECTIONS false) and terminates the existing ones. */
  block(): Promise<void>;
  unblock(): Promise<void>;
  close(): Promise<void>;
}

export async function databaseFaults(databaseUrl: string): Promise<DatabaseFaults> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString(), application_name: 'fault-injector' });
  admin.on('error', () => undefined); // its queries report their own failures
  await admin.connect();
  const ident = admin.escapeIdentifier(name);
  const terminateAll = async () => {
    const { rows } = await admin.query<{ n: number }>(
      'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [name],
    );
    return rows[0].n;
  };
  return {
    terminateAll,
    async block() {
      await admin.query(`ALTER DATABASE ${ident} ALLOW_CONNECTIONS false`);
      await terminateAll();
    },
    async unblock() {
      await admin.query(`ALTER DATABASE ${ident} ALLOW_CONNECTIONS true`);
    },
    async close() {
      await admin.query(`ALTER DATABASE ${ident} ALLOW_CONNECTIONS true`).catch(() => undefined);
      await admin.end().catch(() => undefined);
    },
  };
}
