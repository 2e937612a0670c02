import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
/** The repository root (this file is libs/testing/src/bundles.ts). */
const ROOT = path.resolve(__dirname, '../../..');

/**
 * An app bundled the way every bundle is (scripts/dev/setup/bundle.mjs: npm start, npm test, the
 * images) to `main`, which should be inside the repository, where node_modules resolves. Built in a
 * child: jest's module system cannot import the ES module bundle.mjs.
 */
export async function bundleAppTo(app: string, main: string): Promise<void> {
  const build = `import { bundleApp } from './scripts/dev/setup/bundle.mjs'; await bundleApp(${JSON.stringify(app)}, process.cwd(), ${JSON.stringify(main)});`;
  await run(process.execPath, ['--input-type=module', '-e', build], { cwd: ROOT, timeout: 60_000 });
}

/**
 * Starts a bundle with an invalid PORT and returns what it printed on stderr. Loading a bundle runs
 * every module's top level (the files it reads from disk beside itself included) before the
 * configuration is loaded, and the invalid PORT stops it right after, with nothing connected: a
 * missing asset shows as ENOENT, a complete bundle as the PORT error.
 */
export function startBundleUntilConfig(main: string): Promise<string> {
  return run(process.execPath, [main], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, PORT: 'not-a-port' },
    timeout: 30_000,
  }).then(
    () => '',
    (err: { stderr: string }) => err.stderr,
  );
}
