import { rm } from 'node:fs/promises';
import path from 'node:path';

const REPO_ROOT = path.resolve(__dirname, '../../../..');

export interface ChildScript {
  /** `spawn(process.execPath, script.args, …)` runs it. */
  args: string[];
  /** Deletes the bundle (afterAll). */
  remove(): Promise<void>;
}

/**
 * A TypeScript child process a test starts many times (a consumer it kills on every delivery, a relay
 * it crashes): bundled once with esbuild (as `npm start` runs the apps), so each start loads one file
 * instead of compiling every module through @swc-node/register again, about a second of CPU per start
 * on this machine. npm packages stay external; the bundle lives under dist/ inside the repository,
 * where node_modules resolves, in a folder of this process's own.
 */
export async function bundleChildScript(entry: string): Promise<ChildScript> {
  const dir = path.join(REPO_ROOT, 'dist', 'test-bundles', `child-${process.pid}`);
  const outfile = path.join(dir, `${path.basename(entry, '.ts')}.js`);
  const { build } = await import('esbuild'); // loaded only by the few tests that bundle a child
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    packages: 'external',
    sourcemap: true,
    tsconfig: path.join(REPO_ROOT, 'tsconfig.base.json'),
    outfile,
    logLevel: 'warning',
  });
  return {
    args: ['--enable-source-maps', outfile],
    remove: () => rm(outfile, { force: true }).then(() => rm(`${outfile}.map`, { force: true })),
  };
}
