// The app images run the esbuild bundle with `npm prune --omit=dev` node_modules (infra/docker):
// every package a bundle requires must then be a production dependency, or the container dies at
// start with MODULE_NOT_FOUND. Bundled here the way the apps' Nx build target bundles them
// (scripts/dev/setup/bundle.mjs: npm packages external), in memory.
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { build } from 'esbuild';
import { APPS } from './k8s';

const ROOT = path.resolve(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};
const packageOf = (spec: string) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
const landed = APPS.map((a) => a.name).filter((name) => existsSync(path.join(ROOT, 'apps', name, 'src', 'main.ts')));

/**
 * The packages an app's bundle requires, built once per app for both tests. The options are bundle.mjs's
 * (an ES module, which this CommonJS sandbox cannot import), in memory.
 */
const requiresOf = new Map<string, Promise<Set<string>>>();
function bundleRequires(name: string): Promise<Set<string>> {
  let found = requiresOf.get(name);
  if (!found) {
    found = build({
      entryPoints: [path.join(ROOT, 'apps', name, 'src', 'main.ts')],
      bundle: true,
      platform: 'node',
      target: 'node22',
      format: 'cjs',
      packages: 'external',
      tsconfig: path.join(ROOT, 'tsconfig.base.json'),
      write: false,
      logLevel: 'silent',
    }).then(
      (result) =>
        new Set(
          [...result.outputFiles[0].text.matchAll(/require\("([^"]+)"\)/g)]
            .map((m) => m[1])
            .filter((m) => !m.startsWith('node:') && !builtinModules.includes(m))
            .map(packageOf),
        ),
    );
    requiresOf.set(name, found);
  }
  return found;
}

it.each(landed)('%s: every package its bundle requires is a production dependency', async (name) => {
  const required = await bundleRequires(name);
  expect(required.size).toBeGreaterThan(3); // the scan found the bundle's requires
  expect([...required].filter((p) => !(p in pkg.dependencies))).toEqual([]);
});

// The converse: a production dependency that no app's bundle requires ships in every image for
// nothing (tests and tooling take theirs from devDependencies; the migration image has the full tree).
// The one exception is the Prisma client: libs/db's `@community/db/prisma` entry is runtime code that
// no app loads today (libs/db/src/index.ts says why it is a separate entry).
const RUNTIME_NOT_BUNDLED = new Set(['@prisma/client', '@prisma/adapter-pg', '@prisma/driver-adapter-utils']);
it('every production dependency is required by some app bundle', async () => {
  const required = new Set<string>();
  for (const name of landed) for (const p of await bundleRequires(name)) required.add(p);
  expect(Object.keys(pkg.dependencies).filter((dep) => !required.has(dep) && !RUNTIME_NOT_BUNDLED.has(dep))).toEqual(
    [],
  );
});
