// No import cycles anywhere in the tree (docs/TESTING.md "Structural checks"). A cycle ties two modules
// into one: neither can be read, tested or moved without the other, and at run time one of them sees the
// other half-initialised. Type-only imports count: `import type { Deps } from '../app'` in a route that
// app.ts imports is still two files that cannot be understood apart, and a value import added to either
// later turns it into a run-time cycle. madge builds the graph with TypeScript's own module resolution
// and tsconfig.base.json, so `@community/*` resolves exactly as tsc resolves it; eslint's import/no-cycle
// rules skip type-only imports and need a second resolver kept in step with the paths.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import madge from 'madge';

const ROOT = path.resolve(__dirname, '../..');
// The whole tree's graph takes ~25 s of CPU; on 2 shared cores beside the rest of the suite, far more.
jest.setTimeout(300_000);
const SOURCES = ['apps', 'libs', 'e2e', 'scripts', 'infra', 'prisma.config.ts'];

async function graphOf(paths: string[], baseDir: string, tsConfig: string) {
  return madge(paths, {
    baseDir,
    tsConfig,
    fileExtensions: ['ts', 'mts', 'cts', 'js', 'mjs', 'cjs'],
    // Prisma's generated client has cycles of its own; it is regenerated, not edited.
    excludeRegExp: [/(^|\/)node_modules\//, /(^|\/)generated\//, /(^|\/)dist\//, /(^|\/)coverage\//],
    detectiveOptions: { ts: { skipTypeImports: false }, tsx: { skipTypeImports: false } },
  });
}

describe('import cycles', () => {
  it('the tree has none', async () => {
    const graph = await graphOf(SOURCES, ROOT, path.join(ROOT, 'tsconfig.base.json'));
    const cycles = graph.circular().map((cycle) => cycle.join(' > '));
    expect(cycles).toEqual([]);
    // The graph went through the path aliases: an app's import of a lib reaches the lib's index.
    expect(graph.obj()['apps/reconciler/src/app.ts']).toContain('libs/db/src/index.ts');
    // An alias that failed to resolve would drop its edges silently, and with them any cycle through it.
    expect(graph.warnings().skipped.filter((name: string) => name.startsWith('@community/'))).toEqual([]);
  });

  it('finds a cycle closed by a type-only import through a path alias', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'no-cycles-'));
    try {
      mkdirSync(path.join(dir, 'lib'));
      writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({ compilerOptions: { baseUrl: '.', paths: { '@fixture/lib': ['lib/index.ts'] } } }),
      );
      writeFileSync(
        path.join(dir, 'app.ts'),
        "import { route } from './route';\nexport interface Deps { name: string }\nexport const app = route;\n",
      );
      writeFileSync(
        path.join(dir, 'route.ts'),
        "import type { Deps } from './app';\nimport { helper } from '@fixture/lib';\nexport const route = (d: Deps) => helper(d.name);\n",
      );
      writeFileSync(path.join(dir, 'lib', 'index.ts'), 'export const helper = (s: string) => s;\n');
      const graph = await graphOf([dir], dir, path.join(dir, 'tsconfig.json'));
      expect(graph.circular()).toEqual([['app.ts', 'route.ts']]);
      expect(graph.obj()['route.ts']).toContain('lib/index.ts');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
