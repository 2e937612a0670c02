// The suite runs on the project's Node, and every place that names a Node version names the same one.
// The machine's node (20) stays for the machine's tools; the project brings Node 22 as
// node_modules/.bin/node (scripts/dev/node-runtime, docs/OPERATIONS-LOCAL.md "Node versions"). A run
// of jest on another node (`node node_modules/jest/bin/jest.js` with the machine's) fails here, first
// and by name, instead of as scattered engine-specific failures. The pins (engines, the runtime
// package, .nvmrc, the images, @types/node, the esbuild targets) are checked against each other, so a
// Node upgrade is one coherent change.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { NODE_IMAGE } from '../../infra/tools/src/docker';

const ROOT = path.resolve(__dirname, '../..');
const readJson = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));
const pkg = readJson('package.json') as { engines: { node: string }; devDependencies: Record<string, string> };
const runtime = readJson('scripts/dev/node-runtime/package.json') as {
  version: string;
  optionalDependencies: Record<string, string>;
};
const engines = pkg.engines.node;
const major = semver.major(runtime.version);

describe('the Node the tests run on', () => {
  it('satisfies package.json engines', () => {
    const verdict = semver.satisfies(process.versions.node, engines)
      ? 'ok'
      : 'outside it: run the suite with npm test or npx jest (they use node_modules/.bin/node)';
    expect(`node v${process.versions.node}, engines ${engines}: ${verdict}`).toBe(
      `node v${process.versions.node}, engines ${engines}: ok`,
    );
  });

  it("is the project's own node_modules/.bin/node where npm installed one, and `node` on PATH is the same", () => {
    const bin = path.join(ROOT, 'node_modules', '.bin', 'node');
    // Platforms without a registry build (macOS) use their own Node 22: the engines check above holds.
    if (!existsSync(bin)) return;
    expect(process.execPath).toBe(realpathSync(bin));
    // What npm scripts, shebangs (`npx`) and children spawned by name run.
    expect(execFileSync('node', ['-p', 'process.execPath'], { encoding: 'utf8' }).trim()).toBe(realpathSync(bin));
  });
});

describe('every Node version pin agrees with the project runtime', () => {
  it('the runtime satisfies engines, and engines stay within its major', () => {
    expect(semver.satisfies(runtime.version, engines)).toBe(true);
    expect(semver.satisfies(`${major + 1}.0.0`, engines)).toBe(false);
    expect(pkg.devDependencies['@community/node-runtime']).toBe('file:scripts/dev/node-runtime');
  });

  it('each platform package is the runtime version', () => {
    expect(Object.keys(runtime.optionalDependencies).length).toBeGreaterThan(0);
    for (const [name, version] of Object.entries(runtime.optionalDependencies))
      expect(`${name}@${version}`).toBe(`${name}@${runtime.version}`);
  });

  it('.nvmrc (for platforms without a registry build) names the runtime version', () => {
    expect(readFileSync(path.join(ROOT, '.nvmrc'), 'utf8').trim()).toBe(runtime.version);
  });

  it('the images run the same major.minor', () => {
    expect(NODE_IMAGE).toBe(`node:${major}.${semver.minor(runtime.version)}-bookworm-slim`);
    for (const file of readdirSync(path.join(ROOT, 'infra/docker')).filter((f) => f.endsWith('.Dockerfile'))) {
      expect(
        `${file}: ${readFileSync(path.join(ROOT, 'infra/docker', file), 'utf8').match(/^ARG NODE_IMAGE=(.*)$/m)?.[1]}`,
      ).toBe(`${file}: ${NODE_IMAGE}`);
    }
  });

  it('@types/node describes the same major', () => {
    expect(semver.major(pkg.devDependencies['@types/node'])).toBe(major);
  });

  it('every esbuild target is that major', () => {
    const targets: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
        if (['node_modules', 'dist', 'generated', '.nx'].includes(entry.name)) continue;
        const rel = `${dir}/${entry.name}`;
        if (entry.isDirectory()) walk(rel);
        else if (/\.(m?js|cjs|ts|json)$/.test(entry.name)) {
          for (const m of readFileSync(path.join(ROOT, rel), 'utf8').matchAll(/target:\s*'(node\d+)'/g))
            targets.push(`${rel}: ${m[1]}`);
        }
      }
    };
    for (const dir of ['apps', 'libs', 'scripts', 'infra', 'e2e']) walk(dir);
    expect(targets.length).toBeGreaterThan(0); // the scan finds bundle.mjs at least
    expect(
      targets.filter((t) => !t.endsWith(`: node${major}`) && !t.startsWith('scripts/dev/node-version.spec.ts')),
    ).toEqual([]);
  });
});
