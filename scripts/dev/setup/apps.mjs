// The apps: every apps/<name>/src/main.ts, bundled by esbuild (./bundle.mjs) and run by plain node.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** Default HTTP ports from docs (ARCHITECTURE: HTTP contract). */
export const APP_PORTS = {
  'demo-community-api': 3000,
  'notification-service': 3001,
  'email-service': 3002,
  'feed-service': 3003,
  reconciler: 3004,
};

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
  const rank = (n) => APP_PORTS[n] ?? Infinity;
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** Where ./bundle.mjs writes an app's bundle, relative to the repository root. */
export const bundlePath = (name) => path.join('dist', 'apps', name, 'main.js');

/** How `npm start` runs an app once bundleApp(name) has built it (stack traces map to the .ts sources). */
export const appCommand = (name) => ({
  command: process.execPath,
  args: ['--enable-source-maps', bundlePath(name)],
});
