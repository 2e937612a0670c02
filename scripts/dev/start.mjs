#!/usr/bin/env node
// `npm start`: from a fresh clone to every app running locally. See docs/OPERATIONS-LOCAL.md.
// Node built-ins only (dependencies may not be installed yet when this starts).
import { setTimeout as sleep } from 'node:timers/promises';
import { setup, ROOT } from './setup/index.mjs';
import { c, log, runMain } from './setup/log.mjs';
import { ensureMaildev } from './setup/maildev.mjs';
import { ensureBrokerUsers } from './setup/broker-users.mjs';
import { removeStaleDefaultVhostQueues } from './setup/default-vhost.mjs';
import { logFormat } from './setup/log-format.mjs';
import { appCommand, appPort, discoverApps } from './setup/apps.mjs';
import { Supervisor, onShutdownSignals } from './setup/processes.mjs';
import { httpGet } from './setup/net.mjs';

runMain(async () => {
  const supervisor = new Supervisor({ graceMs: 15_000 });
  let shuttingDown = null;
  const shutdown = (code) => {
    shuttingDown ??= supervisor.stopAll().then(() => process.exit(code));
    return shuttingDown;
  };
  onShutdownSignals(
    (signal) => shutdown(signal === 'SIGINT' ? 130 : 143),
    () => {
      supervisor.killAllNow();
      process.exit(137);
    },
  );

  // `npm start` runs this under `sh -c`; when npm is killed (SIGTERM to npm), the shell dies and the
  // signal never reaches us. Noticing the parent change keeps the children from being left behind.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {}); // EPIPE once the reader is gone
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) {
      log.warn('the parent process (npm) has gone: stopping');
      shutdown(143);
    }
  }, 1000).unref();

  process.env.NODE_ENV ||= 'development';
  // The local demo: demo-community-api's built-in traffic (off by default) makes events flow.
  process.env.DEMO_TRAFFIC_RATE ||= '2';
  // `npm run demo:traffic -- --rate 200` is ~10 writes/s per user: above the write rate limit's default.
  process.env.DEMO_WRITE_RATE_LIMIT ||= '100000';
  let mail;
  let broker;
  try {
    const mgmt = await setup();
    broker = await ensureBrokerUsers(ROOT, mgmt, process.env);
    // The idle copy of the topology earlier runs as guest left in `/`, listed first by the UI.
    await removeStaleDefaultVhostQueues(ROOT, mgmt, broker, process.env).catch((err) =>
      log.warn(`could not check vhost / for a stale copy of the topology (${err.message}); the apps are not affected`),
    );
    mail = await ensureMaildev(ROOT, supervisor, process.env);
  } catch (err) {
    await supervisor.stopAll();
    throw err;
  }

  const apps = discoverApps(ROOT);
  const appEnv = { ...process.env };
  if (appEnv.PORT) {
    log.warn(`PORT=${appEnv.PORT} is set in your shell; not passing it on (each app has its own default port)`);
    delete appEnv.PORT;
  }
  // Imported only now: esbuild is a dependency, installed by setup().
  const { bundleApp } = await import('./setup/bundle.mjs');
  const format = await logFormat(process.stdout.isTTY, process.env);
  for (const name of apps) {
    await bundleApp(name, ROOT);
    const { command, args } = appCommand(name);
    log.step(`starting ${name}: node ${args.join(' ')}`);
    supervisor.spawn(name, command, args, {
      cwd: ROOT,
      env: { ...appEnv, ...broker.envFor(name) },
      restart: true,
      format,
    });
  }

  printSummary(apps, mail, supervisor, broker);
  // A restarted app is announced with the table again, its restart count beside its URL.
  supervisor.onRestart = () => printSummary(apps, mail, supervisor, broker);
  if (!apps.length && !mail?.started) {
    log.info('nothing to supervise (no apps, MailDev already running elsewhere): done');
    return 0;
  }
  supervisor.onAllExited = () => {
    log.error('every process has exited; stopping');
    shutdown(1);
  };
  watchHealth(apps, supervisor);
  await new Promise(() => {}); // run until a signal arrives
});

function printSummary(apps, mail, supervisor, broker) {
  const line = (label, value) => console.log(`  ${label.padEnd(22)} ${value}`);
  console.log(`\n${c.bold('Where to look')}`);
  if (apps.length) {
    for (const name of apps) {
      const port = appPort(name);
      const restarts = supervisor.restarts(name);
      const note = restarts ? c.yellow(`  restarted ${restarts}× (see its log lines)`) : '';
      line(
        name,
        `${port ? `http://127.0.0.1:${port}  (/healthz, /readyz, /metrics)` : 'port: see its log lines'}${note}`,
      );
    }
  } else {
    line('apps', 'none yet: no apps/*/src/main.ts in this checkout');
  }
  const ui = `http://127.0.0.1:15672/#/queues`;
  if (broker?.monitoringLogin) {
    line(
      'RabbitMQ management',
      `${ui}  (log in as ${broker.monitoringLogin.user} / ${broker.monitoringLogin.password}: sees everything, cannot purge or delete)`,
    );
    line('', 'guest / guest is the administrator: only to change the broker itself');
  } else {
    line('RabbitMQ management', `${ui}  (guest / guest)`);
  }
  if (broker?.vhost)
    line(
      'RabbitMQ vhost',
      `${broker.vhost}: each app as its own user (infra/rabbitmq/dev-credentials.json); volunteer sees only its queues`,
    );
  line('RabbitMQ metrics', 'http://127.0.0.1:15692/metrics');
  if (mail) line('MailDev (emails)', `${mail.webUrl}  (REST: ${mail.webUrl}/api/email)`);
  else line('SMTP', process.env.SMTP_URL);
  // What a volunteer on shift starts from (docs/RUNBOOK.md "Start of a shift").
  line('status', 'npm run ops -- status  (every line OK: see docs/RUNBOOK.md "Start of a shift")');
  line('DLQ console', `http://127.0.0.1:${appPort('reconciler') ?? 3004}/console  (paste the admin token below)`);
  if (apps.includes('push-service'))
    line(
      'push page',
      `http://127.0.0.1:${appPort('push-service') ?? 3005}/push/  (subscribes this browser to Web Push)`,
    );
  line('runbook', 'docs/RUNBOOK.md  (one section per status line and per alert)');
  // Development defaults production refuses: the well-known JWT_SECRET and the dev operator's key.
  line('admin token', 'npm run ops -- token  (the development operator, dev-operator-1)');
  line('user tokens', 'HS256 with the dev JWT_SECRET, iss community-site, aud community-notifications, exp ≤ 1 h');
  console.log(`  ${c.dim('Stop everything with Ctrl-C.')}\n`);
}

/** Logs once per app when its /healthz first answers (for up to 2 minutes). */
async function watchHealth(apps, supervisor) {
  const pending = new Set(apps.filter((n) => appPort(n)));
  const deadline = Date.now() + 120_000;
  while (pending.size && Date.now() < deadline) {
    await sleep(1000);
    for (const name of [...pending]) {
      if (!supervisor.alive(name)) {
        pending.delete(name);
        continue;
      }
      const res = await httpGet(`http://127.0.0.1:${appPort(name)}/healthz`, 800);
      if (res?.status === 200) {
        log.ok(`${name} is up: http://127.0.0.1:${appPort(name)}`);
        pending.delete(name);
      }
    }
  }
  for (const name of pending) log.warn(`${name}: /healthz on port ${appPort(name)} has not answered after 2 minutes`);
}
