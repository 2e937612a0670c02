// The driver adapter the WebAssembly schema engine talks to PostgreSQL through.
//
// It is @prisma/adapter-pg 7.10.0 with three corrections the migration engine needs
// (see docs/DATABASE.md, "Workarounds"):
//
// 1. PostgreSQL's internal one-byte type `"char"` (OID 18; pg_class.relkind, pg_constraint.contype,
//    pg_attribute.attidentity, ...) has no column-type mapping in adapter-pg, so every catalog query the
//    engine runs while introspecting fails with "Column type 'char' could not be deserialized".
//    We connect with a pg.Client subclass that reports such columns as `text` (OID 25); pg then
//    parses the value as a plain string, which is exactly what the engine expects.
// 2. adapter-pg's connectToShadowDb() builds the shadow pool from `{ ...config, database }`, but pg lets a
//    `connectionString` override `database`, so the "shadow" pool points at the MAIN database; and it
//    drops the temporary database before closing its own pool, so the DROP fails. We create the shadow
//    database ourselves, connect to it by URL, close the pool first and then drop it WITH (FORCE).
//    (A configured `shadowDatabaseUrl` is used as given instead.)
// 3. adapter-pg's executeScript() splits a script on every `;`, which breaks any migration with a `;`
//    inside a string literal, a comment or a `DO $$ ... $$` / function body. We send the script as one
//    simple-protocol query instead, which is what the native engine does.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import {
  DriverAdapterError,
  type SqlDriverAdapter,
  type SqlMigrationAwareDriverAdapterFactory,
} from '@prisma/driver-adapter-utils';
import { quoteIdent, runSql, withDatabase } from './database';

const PG_CHAR_OID = 18;
const PG_TEXT_OID = 25;

type RowDescription = { fields: Array<{ dataTypeID: number }> };
type RowDescriptionHandler = { _handleRowDescription(msg: RowDescription): void };

const maybeBaseHandler = (pg.Client.prototype as unknown as Partial<RowDescriptionHandler>)._handleRowDescription;
if (typeof maybeBaseHandler !== 'function') {
  // Workaround 1 hooks a pg internal; fail loudly if a pg upgrade removed it rather than misbehave.
  throw new Error(
    'pg.Client#_handleRowDescription is missing: the "char" (OID 18) workaround in scripts/db/adapter.ts needs updating for this pg version',
  );
}
const baseHandler: RowDescriptionHandler['_handleRowDescription'] = maybeBaseHandler;

/** A pg.Client that reports PostgreSQL `"char"` columns as `text` (workaround 1). */
export class CharAsTextClient extends pg.Client {
  _handleRowDescription(msg: RowDescription): void {
    for (const field of msg.fields) {
      if (field.dataTypeID === PG_CHAR_OID) field.dataTypeID = PG_TEXT_OID;
    }
    baseHandler.call(this, msg);
  }
}

/** Turns a pg error into the error shape the engine understands (it then prints code and message). */
function toAdapterError(error: unknown): never {
  const e = error as pg.DatabaseError;
  if (e && typeof e.code === 'string' && typeof e.severity === 'string') {
    throw new DriverAdapterError({
      kind: 'postgres',
      code: e.code,
      severity: e.severity,
      message: e.message,
      detail: e.detail,
      column: e.column,
      hint: e.hint,
    });
  }
  throw error;
}

/** Connects an adapter-pg adapter with workarounds 1 and 3 applied; `onDispose` runs after its pool closed. */
async function connectAdapter(url: string, onDispose?: () => Promise<void>): Promise<SqlDriverAdapter> {
  const config: pg.PoolConfig = { connectionString: url, Client: CharAsTextClient, max: 4 };
  const adapter = await new PrismaPg(config).connect();
  const pool = adapter.underlyingDriver();
  const dispose = adapter.dispose.bind(adapter);
  // Workaround 3: one multi-statement simple query, like the native engine's raw_cmd.
  adapter.executeScript = async (script: string) => {
    await pool.query(script).catch(toAdapterError);
  };
  adapter.dispose = async () => {
    await dispose();
    await onDispose?.();
  };
  return adapter;
}

/**
 * Migration-aware adapter factory for the schema engine.
 * Keeps track of every adapter it hands out so `close()` can release them even if the engine does not.
 */
export class PgMigrationAdapterFactory implements SqlMigrationAwareDriverAdapterFactory {
  readonly provider = 'postgres' as const;
  readonly adapterName = '@prisma/adapter-pg';
  private readonly open = new Set<SqlDriverAdapter>();

  constructor(
    private readonly databaseUrl: string,
    private readonly shadowDatabaseUrl?: string,
  ) {}

  async connect(): Promise<SqlDriverAdapter> {
    return this.track(await connectAdapter(this.databaseUrl));
  }

  async connectToShadowDb(): Promise<SqlDriverAdapter> {
    if (this.shadowDatabaseUrl) return this.track(await connectAdapter(this.shadowDatabaseUrl));
    // Workaround 2: our own throw-away database next to the main one (needs CREATEDB).
    const name = `prisma_migrate_shadow_db_${randomUUID().replace(/-/g, '')}`;
    // CREATE/DROP DATABASE may be issued from any database; the main one is known to exist here.
    await runSql(this.databaseUrl, `CREATE DATABASE ${quoteIdent(name)}`);
    const drop = async () => {
      await runSql(this.databaseUrl, `DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    };
    try {
      return this.track(await connectAdapter(withDatabase(this.databaseUrl, name), drop));
    } catch (error) {
      await drop().catch(() => undefined);
      throw error;
    }
  }

  /** Disposes every adapter still open (idempotent). */
  async close(): Promise<void> {
    const adapters = [...this.open];
    this.open.clear();
    await Promise.allSettled(adapters.map((a) => a.dispose()));
  }

  private track(adapter: SqlDriverAdapter): SqlDriverAdapter {
    const dispose = adapter.dispose.bind(adapter);
    let disposed = false;
    adapter.dispose = async () => {
      // The engine may dispose an adapter and close() may do it again: run the cleanup once.
      if (disposed) return;
      disposed = true;
      this.open.delete(adapter);
      await dispose();
    };
    this.open.add(adapter);
    return adapter;
  }
}
