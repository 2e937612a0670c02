// The apps: every apps/<name>/src/main.ts, bundled by esbuild (./bundle.mjs) and run by plain node.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { projectRules } from './project-rules.mjs';

/** An app's default HTTP port (libs/config DEFAULT_PORTS, the HTTP contract), or undefined. */
export const appPort = (name) => projectRules().appPorts[name];

/** Names of the apps in this checkout, in port order (unknown ones last, alphabetically). */
export function discoverApps(root) {
  const dir = path.join(root, 'apps');
  let names = [];
  try {
    names = readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(path.join(dir, d.name, 'src/main.ts')))
      .map((d) => d.name);
  } catch {
    /* no apps/ */
  }
  const rank = (n) => appPort(n) ?? Infinity;
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** Where ./bundle.mjs writes an app's bundle, relative to the repository root. */
export const bundlePath = (name) => path.join('dist', 'apps', name, 'main.js');

/** How `npm start` runs an app once bundleApp(name) has built it (stack traces map to the .ts sources). */
export const appCommand = (name) => ({
  command: process.execPath,
  args: ['--enable-source-maps', bundlePath(name)],
});
