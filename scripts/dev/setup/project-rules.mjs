// The project's own rules that the dev scripts need, taken from the one TypeScript file that defines
// each of them rather than from a copy kept here:
//   - the local defaults of AMQP_URL, DATABASE_URL, REDIS_URL, SMTP_URL and each app's port
//     (libs/config/src/common.ts);
//   - how the RabbitMQ management API is found from AMQP_URL (managementTargetFor, libs/messaging);
//   - the exponential backoff rule (backoffDelay, libs/messaging), for restarting crashed apps.
//
// Why compile on the fly: these scripts are plain node ESM because they must start on a fresh clone,
// before `npm ci` (on the machine's node 20 there, which cannot import TypeScript; the project's Node 22
// comes with the dependencies, docs/OPERATIONS-LOCAL.md "Node versions"). Nothing that needs these rules runs before
// ensureDependencies(), though, and from then on esbuild (a dependency, which also bundles the apps)
// is there: it compiles each lib's public entry into a CommonJS module in node_modules/.cache (well under
// a second; npm packages stay external and are required from node_modules, as the apps' bundles do). A hand-kept JavaScript
// copy would be shorter, and would drift; a generated file would have to be regenerated and committed
// by whoever edits the source.
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

// The libs' public entries (what `@community/<name>` resolves to), not their internal files.
const SOURCES = {
  config: 'libs/config/src/index.ts',
  messaging: 'libs/messaging/src/index.ts',
};

let loaded = null;

/** Compiles and imports the sources above; call once, after ensureDependencies(). */
export async function loadProjectRules(root) {
  if (loaded) return loaded;
  const { build } = await import('esbuild');
  const outdir = path.join(root, 'node_modules', '.cache', 'community-dev');
  mkdirSync(outdir, { recursive: true });
  const modules = {};
  for (const [name, file] of Object.entries(SOURCES)) {
    // One file per process (npm start and npm test may compile at the same time), removed once imported.
    const outfile = path.join(outdir, `${name}-${process.pid}.cjs`);
    await build({
      entryPoints: [path.join(root, file)],
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'cjs',
      target: 'node22',
      tsconfig: path.join(root, 'tsconfig.base.json'), // resolves @community/* between libs
      outfile,
      logLevel: 'warning',
    });
    try {
      modules[name] = createRequire(import.meta.url)(outfile);
    } finally {
      rmSync(outfile, { force: true });
    }
  }
  const { LOCAL_DEFAULTS, DEFAULT_PORTS } = modules.config;
  const { managementTargetFor, backoffDelay } = modules.messaging;
  loaded = { localDefaults: LOCAL_DEFAULTS, appPorts: DEFAULT_PORTS, managementTargetFor, backoffDelay };
  return loaded;
}

/** The rules loaded by loadProjectRules(); throws when a caller runs before it. */
export function projectRules() {
  if (!loaded)
    throw new Error(
      'scripts/dev: loadProjectRules() must run (after ensureDependencies) before the project rules are used',
    );
  return loaded;
}
