// The operations tools the test suite drives for real (`npm test` only; `npm start` needs none):
// promtool and amtool check the alert rules and Alertmanager config, kubectl renders the kustomize
// overlays, Chromium runs the browser tests (the DLQ console, the push page and its worker), prometheus scrapes the running stack,
// pgbouncer fronts Postgres in transaction mode for one test, haproxy fronts the cluster fault suite's
// RabbitMQ cluster.
// Missing ones are installed from Debian's packages when we can (root on Debian); otherwise the
// setup stops and names the package. Node built-ins only.
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { findBin, run } from './system.mjs';
import { log, SetupError } from './log.mjs';

/** Each executable the tests need, and the Debian package that ships it. */
export const TOOLS = [
  { bin: 'promtool', apt: 'prometheus', why: 'alert rule unit tests, config checks' },
  { bin: 'prometheus', apt: 'prometheus', why: 'the dashboard query test scrapes the running stack' },
  { bin: 'amtool', apt: 'prometheus-alertmanager', why: 'Alertmanager config check' },
  { bin: 'kubectl', apt: 'kubectl', why: 'renders the kustomize overlays' },
  { bin: 'chromium', apt: 'chromium', why: 'the browser tests of the DLQ console and the push page' },
  // Debian installs it in /usr/sbin, which findBin also searches.
  {
    bin: 'pgbouncer',
    apt: 'pgbouncer',
    why: 'the PgBouncer transaction-mode test (apps/feed-service/test/pgbouncer.test.ts)',
  },
  // The package's own daemon does not start: the policy-rc.d below, and the suite runs its own in the foreground.
  { bin: 'haproxy', apt: 'haproxy', why: 'the load balancer of the cluster fault suite (e2e/cluster/cluster.ts)' },
];

const canApt = () =>
  process.platform === 'linux' &&
  typeof process.getuid === 'function' &&
  process.getuid() === 0 &&
  existsSync('/etc/debian_version') &&
  Boolean(findBin('apt-get'));

/** Installs the missing tools; `only` (executable names) limits it to those (`npm run test:cluster`: haproxy). */
export function ensureTools(only) {
  const wanted = only ? TOOLS.filter((t) => only.includes(t.bin)) : TOOLS;
  const missing = wanted.filter((t) => !findBin(t.bin));
  if (missing.length === 0) return;
  const pkgs = [...new Set(missing.map((t) => t.apt))];
  const list = missing.map((t) => `${t.bin} (${t.why})`).join(', ');
  if (!canApt()) {
    throw new SetupError(`missing ${list}; install the packages ${pkgs.join(' ')} and run again.`);
  }
  log.step(`installing Debian packages for ${list}: ${pkgs.join(' ')}`);
  // The prometheus and alertmanager packages start their own daemons on 9090/9093; the tests start
  // their own on free ports, so keep the packages' daemons from starting: a policy-rc.d that exits
  // 101 ("action forbidden") for the length of the install, the standard Debian switch for this.
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !existsSync(policy);
  if (ownPolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  try {
    aptInstall(pkgs, env);
  } finally {
    if (ownPolicy) rmSync(policy, { force: true });
  }
  const still = wanted.filter((t) => !findBin(t.bin));
  if (still.length > 0)
    throw new SetupError(`installed ${pkgs.join(' ')} but ${still.map((t) => t.bin).join(', ')} is still missing.`);
  log.ok(`installed ${pkgs.join(' ')}`);
}

function aptInstall(pkgs, env) {
  if (!run('apt-get', ['update'], { inherit: true, timeoutMs: 15 * 60_000, env }).ok) {
    throw new SetupError('apt-get update failed; see its output above.');
  }
  const install = run('apt-get', ['install', '-y', '--no-install-recommends', ...pkgs], {
    inherit: true,
    timeoutMs: 30 * 60_000,
    env,
  });
  if (!install.ok) throw new SetupError(`apt-get install -y ${pkgs.join(' ')} failed; see its output above.`);
}
