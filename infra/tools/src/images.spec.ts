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
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
const packageOf = (spec: string) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
const landed = APPS.map((a) => a.name).filter((name) => existsSync(path.join(ROOT, 'apps', name, 'src', 'main.ts')));

it.each(landed)('%s: every package its bundle requires is a production dependency', async (name) => {
  const result = await build({
    entryPoints: [path.join(ROOT, 'apps', name, 'src', 'main.ts')],
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    packages: 'external',
    tsconfig: path.join(ROOT, 'tsconfig.base.json'),
    write: false,
    logLevel: 'silent',
  });
  const code = result.outputFiles[0].text;
  const required = new Set([...code.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]).filter((m) => !m.startsWith('node:') && !builtinModules.includes(m)).map(packageOf));
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
  for (const name of landed) {
    const result = await build({
      entryPoints: [path.join(ROOT, 'apps', name, 'src', 'main.ts')],
      bundle: true,
      platform: 'node',
      target: 'node22',
      format: 'cjs',
      packages: 'external',
      tsconfig: path.join(ROOT, 'tsconfig.base.json'),
      write: false,
      logLevel: 'silent',
    });
    for (const m of result.outputFiles[0].text.matchAll(/require\("([^"]+)"\)/g)) required.add(packageOf(m[1]));
  }
  expect(Object.keys(pkg.dependencies).filter((dep) => !required.has(dep) && !RUNTIME_NOT_BUNDLED.has(dep))).toEqual([]);
});
