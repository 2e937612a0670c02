// Small PostgreSQL helpers for the migration runner: URL handling, "create the database if missing",
// and connection errors that tell the operator which setting to fix.
import pg from 'pg';
import { LOCAL_DEFAULTS } from '@community/config';

/** Raised for anything the operator fixes in the environment (unreachable server, bad URL, no database). */
export class DatabaseSetupError extends Error {
  override name = 'DatabaseSetupError';
}

export function parseDatabaseUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new DatabaseSetupError(
      `DATABASE_URL is not a valid URL: "${url}". Expected postgresql://user[:password]@host:port/database`,
    );
  }
  if (parsed.protocol !== 'postgresql:' && parsed.protocol !== 'postgres:') {
    throw new DatabaseSetupError(
      `DATABASE_URL must use the postgresql:// scheme, got "${parsed.protocol}//" in ${redactUrl(url)}`,
    );
  }
  if (databaseName(url) === '') {
    throw new DatabaseSetupError(
      `DATABASE_URL names no database: ${redactUrl(url)}. Expected postgresql://user@host:port/database`,
    );
  }
  return parsed;
}

export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
}

/** The same server and credentials, another database. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

/** The server's maintenance database, used to create databases that do not exist yet. */
export function adminUrl(url: string): string {
  return withDatabase(url, 'postgres');
}

/** The URL with its password masked, safe for logs and error messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '<unparseable URL>';
  }
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Runs SQL on a short-lived connection. */
export async function runSql<R extends pg.QueryResultRow = pg.QueryResultRow>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** Error codes worth a specific hint. */
function hintFor(error: { code?: string }): string {
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'Is PostgreSQL running and listening there?';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'The host name does not resolve.';
    case '28P01':
    case '28000':
      return 'The server rejected the credentials.';
    default:
      return '';
  }
}

/** Wraps a failure to reach the server in a message that names DATABASE_URL (password masked). */
export function connectionError(url: string, error: unknown): DatabaseSetupError {
  const e = error as { message?: string; code?: string };
  const hint = hintFor(e);
  return new DatabaseSetupError(
    `Cannot connect to PostgreSQL with DATABASE_URL=${redactUrl(url)}: ${e?.message ?? String(error)}.` +
      `${hint ? ` ${hint}` : ''} Set DATABASE_URL (default ${LOCAL_DEFAULTS.DATABASE_URL}).`,
  );
}

export type DatabaseState = 'exists' | 'missing';

/** Whether the database in `url` exists; any other failure becomes a DatabaseSetupError. */
export async function probeDatabase(url: string): Promise<DatabaseState> {
  parseDatabaseUrl(url);
  try {
    await runSql(url, 'SELECT 1');
    return 'exists';
  } catch (error) {
    if ((error as { code?: string }).code === '3D000') return 'missing'; // invalid_catalog_name
    throw connectionError(url, error);
  }
}

/**
 * Creates the database named in `url` when it does not exist (connecting to the `postgres` maintenance
 * database for that). Returns true when it was created. Safe against a concurrent creator.
 */
export async function ensureDatabase(url: string): Promise<boolean> {
  if ((await probeDatabase(url)) === 'exists') return false;
  const name = databaseName(url);
  try {
    await runSql(adminUrl(url), `CREATE DATABASE ${quoteIdent(name)}`);
    return true;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === '42P04') return false; // duplicate_database: someone else created it meanwhile
    if (code === '42501') {
      throw new DatabaseSetupError(
        `Database "${name}" does not exist and the user in DATABASE_URL=${redactUrl(url)} may not create it (needs CREATEDB). Create it, or point DATABASE_URL at an existing database.`,
      );
    }
    throw connectionError(adminUrl(url), error);
  }
}
