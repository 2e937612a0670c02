// The test naming convention, enforced: unit specs (`*.spec.ts`, no broker or database) live next to
// the code they test, under `src/`; integration tests (`*.test.ts`, the real broker and database)
// live under the project's `test/` folder (e2e/ is all integration). A reader then knows from a
// file's name what it needs to run, and which tests a change in `src/` may break.
import { readdirSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const SKIP = new Set(['node_modules', 'dist', 'generated', '.nx']);

/** The paths (relative, '/'-separated) that break the convention, each with the reason. */
export function layoutViolations(files: readonly string[]): string[] {
  const out: string[] = [];
  for (const file of files) {
    const dirs = file.split('/').slice(0, -1);
    if (file.endsWith('.test.ts') && dirs.includes('src')) {
      out.push(
        `${file}: an integration test (*.test.ts) under src/; move it to the project's test/, or rename it *.spec.ts if it needs no broker or database`,
      );
    } else if (file.endsWith('.spec.ts') && dirs.includes('test')) {
      out.push(`${file}: a unit spec (*.spec.ts) under test/; put it next to the code it tests in src/`);
    }
  }
  return out;
}

function testFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) found.push(...testFiles(rel));
    else if (/\.(spec|test)\.ts$/.test(entry.name)) found.push(rel);
  }
  return found;
}

describe('test layout', () => {
  it('flags integration tests under src/ and unit specs under test/', () => {
    expect(
      layoutViolations([
        'libs/a/src/x.spec.ts',
        'libs/a/test/x.test.ts',
        'libs/a/src/deep/y.test.ts',
        'apps/b/test/support/z.spec.ts',
        'e2e/pipeline.test.ts',
      ]),
    ).toEqual([
      expect.stringMatching(/^libs\/a\/src\/deep\/y\.test\.ts: an integration test/),
      expect.stringMatching(/^apps\/b\/test\/support\/z\.spec\.ts: a unit spec/),
    ]);
  });

  it('holds for every test file in apps/, libs/, e2e/, scripts/ and infra/', () => {
    const files = ['apps', 'libs', 'e2e', 'scripts', 'infra'].flatMap(testFiles);
    expect(files.length).toBeGreaterThan(20); // the walk found the suite
    expect(layoutViolations(files)).toEqual([]);
  });
});
