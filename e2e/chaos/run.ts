import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { createTestDatabase, createTestVhost, databaseFaults, eventually, rabbitmqctl } from '@community/testing';
import { freePort, http, startApp, startSmtpSink, stopApp, type App } from '../harness';
import { checkInvariants, pendingWork, queueDepths, type Figures } from './checks';
import { Ledger, runLoad } from './load';

/**
 * The fault suite (`npm run test:chaos`): the three apps as real processes on their own vhost and
 * database, a steady load of mentions through the demo API, and one fault at a time injected in the
 * middle of the load and healed. After each fault the system drains and the invariants are checked
 * over everything acknowledged so far. Exits 1 if any invariant fails or an app exits on its own.
 *
 * CHAOS_EVENTS: mention events per fault (default 2,000); CHAOS_RATE: events per second (150);
 * CHAOS_FAULTS: a comma-separated subset of the fault names below.
 */
const EVENTS = Number(process.env.CHAOS_EVENTS ?? 2000);
const RATE = Number(process.env.CHAOS_RATE ?? 150);
const SECRET = 'chaos-secret-chaos-secret-chaos-secret';
const USERS = Array.from({ length: 20 }, (_, i) => `chaosuser${i}`);
const AUTHOR = 'chaosauthor';
const exec = promisify(execFile);

type AppKey = 'api' | 'notifications' | 'email';
const NAMES: Record<AppKey, string> = { api: 'demo-community-api', notifications: 'notification-service', email: 'email-service' };
const apps = {} as Record<AppKey, App>;
const killedOnPurpose = new Set<App>();
const unexpectedExits: string[] = [];
let env: Record<string, string>;

async function launch(key: AppKey, port: number): Promise<void> {
  const app = await startApp(NAMES[key], port, env);
  app.proc.on('exit', (code, signal) => {
    if (!killedOnPurpose.has(app)) unexpectedExits.push(`${app.name} exited (${signal ?? code}): ${app.output.join('').slice(-1500)}`);
  });
  apps[key] = app;
}

async function kill9(key: AppKey): Promise<void> {
  killedOnPurpose.add(apps[key]);
  await stopApp(apps[key], 'SIGKILL');
}

/** Each fault: inject, hold, heal. Resolves once healed. */
const FAULTS: Record<string, (ctx: { vhost: string; dbUrl: string }) => Promise<void>> = {
  'kill -9 notification-service': async () => { await kill9('notifications'); await launch('notifications', apps.notifications.port); },
  'kill -9 email-service': async () => { await kill9('email'); await launch('email', apps.email.port); },
  'kill -9 demo-community-api': async () => { await kill9('api'); await launch('api', apps.api.port); },
  'close_all_connections every 5 s for 30 s': async ({ vhost }) => {
    for (let i = 0; i < 6; i++) {
      await rabbitmqctl('close_all_connections', '-q', '--vhost', vhost, 'chaos: injected connection loss');
      await sleep(5000);
    }
  },
  'pg_terminate_backend (own database) x5 2 s apart': async ({ dbUrl }) => {
    const faults = await databaseFaults(dbUrl);
    try {
      for (let i = 0; i < 5; i++) {
        await faults.terminateAll();
        await sleep(2000);
      }
    } finally {
      await faults.close();
    }
  },
  'RabbitMQ stop_app 10 s, start_app': async () => {
    await rabbitmqctl('stop_app');
    await sleep(10_000);
    await rabbitmqctl('start_app');
  },
  'Postgres restart -m immediate': async () => {
    const version = (await exec('ls', ['/etc/postgresql'])).stdout.trim().split('\n')[0];
    await exec('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart', '-m', 'immediate'], { timeout: 120_000 });
  },
};

interface Row extends Figures { fault: string; requests: number; refused: string; firstEffectMs: number; drainedMs: number; backlogMs: number; exits: number; notReady: string }

async function main(): Promise<number> {
  const selected = process.env.CHAOS_FAULTS ? process.env.CHAOS_FAULTS.split(',').map((s) => s.trim()) : Object.keys(FAULTS);
  const unknown = selected.filter((f) => !FAULTS[f]);
  if (unknown.length > 0) throw new Error(`unknown fault(s) ${JSON.stringify(unknown)}; known: ${Object.keys(FAULTS).join(' | ')}`);
  const [vhost, db, smtp] = await Promise.all([createTestVhost('chaos'), createTestDatabase('chaos'), startSmtpSink()]);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => undefined); // the Postgres faults hit this pool too; its queries retry below
  const rows: Row[] = [];
  try {
    const [api, notifications, email] = await Promise.all([freePort(), freePort(), freePort()]);
    env = {
      AMQP_URL: vhost.url,
      DATABASE_URL: db.url,
      JWT_SECRET: SECRET,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      SMTP_RATE_PER_SECOND: '0',
      NOTIFICATION_SERVICE_URL: `http://127.0.0.1:${notifications}`,
      UNSUBSCRIBE_BASE_URL: `http://127.0.0.1:${email}`,
      DEMO_TRAFFIC_RATE: '0',
    };
    await launch('notifications', notifications);
    await Promise.all([launch('email', email), launch('api', api)]);
    for (const id of [AUTHOR, ...USERS]) {
      const res = await http('POST', `${apps.api.url}/v1/users`, { id, email: `${id}@example.test`, displayName: id });
      if (res.status !== 201) throw new Error(`creating ${id} answered ${res.status}`);
    }
    const post = await http<{ id: string }>('POST', `${apps.api.url}/v1/posts`, { title: 'Chaos', body: 'load' }, { 'x-user-id': AUTHOR });
    const ledger = new Ledger();

    for (const fault of selected) {
      const inject = FAULTS[fault];
      const before = { entries: ledger.entries.length, refused: new Map(ledger.refused), transport: ledger.transportErrors, exits: unexpectedExits.length };
      let healedAt = 0;
      let injected: () => void = () => undefined;
      const injectAt = new Promise<void>((resolve) => { injected = resolve; });
      // The fault starts once a third of the phase's events are acknowledged: work is in flight.
      const faultDone = injectAt.then(() => inject({ vhost: vhost.vhost, dbUrl: db.url })).then(() => { healedAt = Date.now(); });
      const watcher = (async () => {
        while (ledger.entries.length - before.entries < EVENTS / 6) await sleep(100);
        injected();
      })();
      // Recovered end to end: a notification created and an email received since the heal, watched
      // from the heal on (the load goes on meanwhile).
      const recovered = faultDone.then(async () => {
        const mailsAtHeal = smtp.mails.length;
        const since = async () => (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM notification_items WHERE type = 'mention' AND created_at > to_timestamp($1 / 1000.0)`, [healedAt])).rows[0].n;
        return eventually('a first effect after the heal', async () => (smtp.mails.length > mailsAtHeal && (await since().catch(() => 0)) > 0 ? Date.now() : false), 300_000, 100).catch(() => NaN);
      });
      console.log(`[chaos] ${fault}: load of ${EVENTS} events at ${RATE}/s`);
      const load = await runLoad({ apiUrl: () => apps.api.url, postId: post.body.id, author: AUTHOR, users: USERS, eventsPerSecond: RATE, events: EVENTS, until: faultDone, ledger });
      const loadEnded = Date.now();
      await Promise.all([watcher, faultDone]);
      const firstEffect = await recovered;

      const drained = await eventually('drained (queues and outbox empty)', async () => {
        const depths = await queueDepths(vhost.vhost).catch(() => undefined);
        const work = await pendingWork(pool).catch(() => undefined);
        if (!depths || !work || work.outbox > 0 || work.emails > 0) return false;
        return [...depths].every(([q, n]) => n === 0 || q.endsWith('.dlq') || q === 'feed-service.activity') ? Date.now() : false;
      }, 600_000, 500);
      await sleep(1000); // the SMTP sink's last messages
      const depths = await queueDepths(vhost.vhost);
      const dlq = [...depths].filter(([q]) => q.endsWith('.dlq')).reduce((n, [, d]) => n + d, 0);
      const figures = await checkInvariants(pool, ledger, smtp.mails, dlq);
      // Every app says it is ready again on its own (a dependency it still thinks is down would show here).
      const notReady = (await Promise.all(Object.values(apps).map(async (a) => ((await fetch(`${a.url}/readyz`).catch(() => undefined))?.status === 200 ? [] : [a.name])))).flat();
      rows.push({
        fault,
        ...figures,
        requests: load.sent,
        refused: [...ledger.refused].map(([status, n]) => [status, n - (before.refused.get(status) ?? 0)]).filter(([, n]) => n > 0).map(([status, n]) => `${n}×${status}`).concat(ledger.transportErrors > before.transport ? [`${ledger.transportErrors - before.transport}×no answer`] : []).join(', ') || 'none',
        firstEffectMs: firstEffect - healedAt,
        drainedMs: drained - healedAt,
        backlogMs: drained - loadEnded,
        exits: unexpectedExits.length - before.exits,
        notReady: notReady.join(', ') || 'none',
      });
      console.log(`[chaos] ${fault}: ${JSON.stringify(rows.at(-1))}`);
    }
  } finally {
    await Promise.all(Object.values(apps).map((a) => { killedOnPurpose.add(a); return stopApp(a); }));
    await pool.end().catch(() => undefined);
    await smtp.close();
    await Promise.all([vhost.delete(), db.drop()]);
  }
  printTable(rows);
  for (const e of unexpectedExits) console.error(`[chaos] UNEXPECTED EXIT: ${e}`);
  const failed = rows.filter((r) => r.lost > r.dlq || r.duplicated > 0 || r.emailsMissing > 0 || r.emailsDuplicated > 0 || r.counterMismatches > 0 || r.exits > 0 || r.notReady !== 'none');
  return failed.length === 0 && unexpectedExits.length === 0 ? 0 : 1;
}

function printTable(rows: Row[]): void {
  console.log('\n| Fault | Requests (failed) | Ledger events (cumulative) | Lost | Duplicated (rows not in the ledger) | DLQ | Emails missing / duplicated / crash window | Counters off | Unexpected exits | Not ready after drain | First effect after heal | Drained after heal | Drained after the last request |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.fault} | ${r.requests} (${r.refused}) | ${r.ledgerEvents} | ${r.lost} | ${r.duplicated} (${r.unledgered}) | ${r.dlq} | ${r.emailsMissing} / ${r.emailsDuplicated} / ${r.emailsCrashWindow} | ${r.counterMismatches} | ${r.exits} | ${r.notReady} | ${(r.firstEffectMs / 1000).toFixed(1)} s | ${(r.drainedMs / 1000).toFixed(1)} s | ${(r.backlogMs / 1000).toFixed(1)} s |`);
  }
}

// Whatever ends this process, the apps it started end with it (they would otherwise hold the ports and the test database).
process.on('exit', () => {
  for (const a of Object.values(apps)) if (a.proc.exitCode === null && a.proc.signalCode === null) a.proc.kill('SIGKILL');
});

main().then((code) => { process.exitCode = code; }, (err: unknown) => {
  console.error('[chaos] failed:', err, ...unexpectedExits);
  process.exitCode = 1;
});
