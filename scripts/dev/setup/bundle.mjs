// Bundles an app (apps/<name>/src/main.ts and the @community libs it imports) into
// dist/apps/<name>/main.js with esbuild, for plain `node`: how `npm start` runs the apps and how a
// production image would. npm packages stay external (node_modules). Bundling takes well under a
// second per app; running the bundle instead of compiling on the fly (@swc-node/register) saves
// ~100 MB of RSS per process (docs/BENCHMARKS.md).
//
//   node scripts/dev/setup/bundle.mjs <app> [<app> ...]     (the apps' `nx run <app>:build`)
import { copyFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { bundlePath } from './apps.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * Builds the bundle (with a source map: run it with --enable-source-maps); returns its absolute path.
 * `outfile` (absolute) elsewhere than dist/apps/<name>/main.js: `npm test` builds its own set per run,
 * so a concurrent `npm start` never runs a half-written file. It must stay inside `root`, where
 * node_modules resolves.
 */
export async function bundleApp(name, root = ROOT, outfile = path.join(root, bundlePath(name))) {
  const result = await build({
    entryPoints: [path.join(root, 'apps', name, 'src', 'main.ts')],
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    packages: 'external',
    sourcemap: true,
    tsconfig: path.join(root, 'tsconfig.base.json'),
    outfile,
    absWorkingDir: root,
    metafile: true,
    logLevel: 'warning',
  });
  copyAssets(Object.keys(result.metafile.inputs), root, path.dirname(outfile));
  return outfile;
}

/**
 * Files a module reads from disk beside itself, at its `__dirname`: the feed's Lua scripts
 * (apps/feed-service/src/redis/commands/index.ts, docs/FEED.md "Lua scripts") and the DLQ console's
 * page, stylesheet and browser script (apps/reconciler/src/dlq/page.ts). In a bundle `__dirname` is
 * the bundle's folder, so the asset files beside every bundled module of ours (never node_modules')
 * are copied there. From the sources (jest, @swc-node/register) they are where the module is, with
 * no loader or hook. Names must be unique across the bundle's folders, since they land side by side.
 */
const ASSET_SUFFIXES = ['.lua', '.html', '.css', '.browser.js'];

function copyAssets(inputs, root, outdir) {
  const copied = new Map();
  const ours = inputs.filter((input) => !input.split(/[\\/]/).includes('node_modules'));
  for (const dir of new Set(ours.map((input) => path.dirname(path.resolve(root, input))))) {
    for (const file of readdirSync(dir).filter((f) => ASSET_SUFFIXES.some((suffix) => f.endsWith(suffix)))) {
      const from = path.join(dir, file);
      if (copied.has(file) && copied.get(file) !== from)
        throw new Error(`two assets named ${file} in one bundle: ${copied.get(file)} and ${from}`);
      copied.set(file, from);
      copyFileSync(from, path.join(outdir, file));
    }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const names = process.argv.slice(2);
  if (!names.length) {
    console.error('usage: node scripts/dev/setup/bundle.mjs <app> [<app> ...]');
    process.exit(2);
  }
  // No top-level await: the TypeScript benches load this module with require() (require of ESM, Node >= 22.12).
  (async () => {
    for (const name of names) console.log(path.relative(ROOT, await bundleApp(name)));
  })().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
