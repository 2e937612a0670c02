// Loads Prisma's schema engine compiled to WebAssembly (@prisma/schema-engine-wasm, the same engine commit
// prisma 7.10.0 ships natively) and connects it to PostgreSQL through our driver adapter.
//
// Why not `prisma migrate`: every Prisma CLI command first downloads the native schema-engine binary from a
// host that is unreachable here. The wasm build needs no download and produces the same migration SQL,
// checksums and `_prisma_migrations` rows.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import type { SchemaEngine } from '@prisma/schema-engine-wasm';
import { PgMigrationAdapterFactory } from './adapter';

type SchemaEngineClass = typeof SchemaEngine;

type WasmExports = Record<string, unknown>;

type WasmBindings = {
  SchemaEngine: SchemaEngineClass;
  __wbg_set_wasm(exports: WasmExports): void;
};

// The global WebAssembly API, typed here because this project's TypeScript libs (ES2022, no DOM) omit it.
const { WebAssembly: wasmApi } = globalThis as unknown as {
  WebAssembly: {
    instantiate(bytes: Uint8Array, imports: Record<string, unknown>): Promise<{ instance: { exports: WasmExports } }>;
  };
};

let bindings: Promise<SchemaEngineClass> | undefined;

// A real `import()`: the transpiler would turn a literal one into require(), which cannot load this ESM file
// through the CommonJS hooks this script runs under.
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

/**
 * The package's own entry point imports the .wasm file as an ES module, which Node only does behind a flag.
 * So we do what that entry does by hand: load the JS glue, instantiate the wasm with the glue as its
 * import object, hand the instance back to the glue and run the wasm start function. Once per process.
 */
function loadSchemaEngineClass(): Promise<SchemaEngineClass> {
  bindings ??= (async () => {
    const dir = path.dirname(require.resolve('@prisma/schema-engine-wasm'));
    const glue = (await importEsm(pathToFileURL(path.join(dir, 'schema_engine_bg.js')).href)) as WasmBindings;
    const bytes = await readFile(path.join(dir, 'schema_engine_bg.wasm'));
    const { instance } = await wasmApi.instantiate(bytes, { './schema_engine_bg.js': glue });
    glue.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return glue.SchemaEngine;
  })();
  return bindings;
}

export type EngineSession = {
  engine: SchemaEngine;
  /** Frees the engine and closes every connection it opened. */
  close(): Promise<void>;
};

export type EngineOptions = {
  databaseUrl: string;
  shadowDatabaseUrl?: string;
  /** [path, content] of each Prisma schema file, so the engine knows the target datamodel. */
  schemaFiles: Array<[string, string]>;
  /** Receives the engine's tracing output (JSON lines). */
  log?: (line: string) => void;
};

export async function openEngine(options: EngineOptions): Promise<EngineSession> {
  const SchemaEngineClass = await loadSchemaEngineClass();
  const factory = new PgMigrationAdapterFactory(options.databaseUrl, options.shadowDatabaseUrl);
  const log = options.log ?? (() => undefined);
  const engine = await SchemaEngineClass.new(
    { datamodels: options.schemaFiles },
    (line: string) => log(line),
    bindMigrationAwareSqlAdapterFactory(factory),
  );
  let closed = false;
  return {
    engine,
    async close() {
      if (closed) return;
      closed = true;
      engine.free();
      await factory.close();
    },
  };
}

/**
 * Engine errors carry a Prisma error code (P3009, ...) and a readable message followed by the engine's span
 * trace ("   0: sql_schema_connector::..."). Keeps code and message; the trace only with DB_MIGRATE_DEBUG.
 */
export function describeEngineError(error: unknown): string {
  const e = error as { message?: string; code?: string };
  const code = typeof e?.code === 'string' && /^P\d+$/.test(e.code) ? `${e.code}: ` : '';
  const text = String(e?.message ?? error);
  return `${code}${process.env.DB_MIGRATE_DEBUG ? text : text.replace(/\n\s+0: [\s\S]*$/, '').trimEnd()}`;
}
