import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { TcpProxy } from '@community/testing';
import { startApp, stopApp, type App, type SmtpSink } from '../harness';
import { pendingWork, queueDepthsFast, type Management } from './checks';
import type { PrivatePostgres, PrivateRabbit, PrivateRedis } from './private-deps';
import type { Cluster } from '../cluster/cluster';

// The apps under test and what the suite started for them: launched, killed on purpose, restarted
// after an unexpected exit (a breach), and all stopped at the end.

/**
 * The apps under test, data-driven: adding one is one entry. Every app gets the same dependency
 * URLs (PORT, DATABASE_URL, AMQP_URL, REDIS_URL, ...); `amqpViaProxy` puts the blackhole-able proxy
 * between it and the broker; `backlog` is what it consumes (a kill waits for a backlog there: mid-batch).
 */
export interface AppSpec {
  key: string;
  name: string;
  amqpViaProxy?: boolean;
  /** Where its work in hand shows: these queues, the outbox (a producer), or nowhere the suite can see (kill at random). */
  backlog: 'outbox' | 'none' | string[];
  env?: (ports: Record<string, number>) => Record<string, string>;
}
export const APPS: AppSpec[] = [
  {
    key: 'notifications',
    name: 'notification-service',
    amqpViaProxy: true,
    backlog: ['notification-service.critical', 'notification-service.standard'],
  },
  { key: 'email', name: 'email-service', backlog: ['email-service.send', 'email-service.send-critical'] },
  { key: 'api', name: 'demo-community-api', backlog: 'outbox' },
  // Its recount jobs run against the live counters the invariants check; its queue is idle under this load.
  {
    key: 'reconciler',
    name: 'reconciler',
    backlog: 'none',
    env: (p) => ({ BREAKER_METRICS_URLS: `http://127.0.0.1:${p.email}/metrics` }),
  },
  // The feed projections, fan-out and the cache in the private Redis (docs/FEED.md).
  {
    key: 'feed',
    name: 'feed-service',
    backlog: ['feed-service.activity', 'feed-service.fanout', 'feed-service.backfill'],
  },
  // Web Push (docs/PUSH.md): every notification.created reaches its queue; the load's users have no
  // browser subscribed, so what it proves here is that its queue drains through every fault.
  { key: 'push', name: 'push-service', backlog: ['push-service.send'] },
];

export interface Deps {
  /** The broker as the suite's checks and the single-node faults use it (the cluster: any node, through haproxy). */
  rabbit: Pick<PrivateRabbit, 'ctl' | 'amqpUrl' | 'amqpPort' | 'managementUrl'>;
  /** The cluster suite's cluster; every app's AMQP_URL is then `appAmqpUrl` (haproxy, or the node list). */
  cluster?: Cluster;
  appAmqpUrl?: string;
  pgServer: PrivatePostgres;
  redis: PrivateRedis;
  smtp: SmtpSink;
  amqpProxy: TcpProxy;
  pgProxy: TcpProxy;
  dbUrl: string;
  /** The suite's own pool, straight to the server (not through the proxy). */
  db: pg.Pool;
  management: Management;
}

/**
 * The running apps and the suite's own bookkeeping of them, one per run (run.ts). `unexpectedExits`
 * and `faultBreaches` are what the report counts against the current fault's row.
 */
export class Fleet {
  /** The running app of each key (notifications, email, api, reconciler, feed, push). */
  readonly apps = new Map<string, App>();
  /** What a fault's own checks found wrong during the current phase (reported as breaches of its row). */
  readonly faultBreaches: string[] = [];
  readonly killedOnPurpose = new Set<App>();
  readonly unexpectedExits: string[] = [];
  /** What the suite started besides the apps, stopped in reverse order by cleanup(). */
  readonly started: Array<{ stop(): Promise<void> }> = [];
  appEnv: Record<string, string> = {};
  readonly ports: Record<string, number> = {};
  private cleaning: Promise<void> | undefined;

  get cleaningUp(): boolean {
    return this.cleaning !== undefined;
  }

  async launch(spec: AppSpec, deps: Deps): Promise<void> {
    const amqp =
      deps.appAmqpUrl ??
      (spec.amqpViaProxy ? `amqp://guest:guest@127.0.0.1:${deps.amqpProxy.port}` : deps.rabbit.amqpUrl);
    const app = await startApp(spec.name, this.ports[spec.key], {
      ...this.appEnv,
      AMQP_URL: amqp,
      ...(spec.env?.(this.ports) ?? {}),
    });
    app.proc.on('exit', (code, signal) => {
      if (this.killedOnPurpose.has(app) || this.cleaning) return;
      // Its whole output goes to a file (a log line can be long enough to push the cause out of the tail).
      const file = path.join(tmpdir(), `chaos-exit-${app.name}-${Date.now()}.log`);
      void writeFile(file, app.output.join('')).catch(() => undefined);
      const what = `${app.name} exited (${signal ?? code}; whole output in ${file}): ${app.output.join('').slice(-3000)}`;
      this.unexpectedExits.push(what);
      console.error(`[chaos] UNEXPECTED EXIT (a breach; restarted as a supervisor would): ${what}`);
      // Restarted, as `npm start` and a Deployment would, so the rest of the run still measures something.
      void sleep(1000)
        .then(() => (this.cleaning ? undefined : this.launch(spec, deps)))
        .catch((err: unknown) => console.error(`[chaos] restarting ${app.name}:`, err));
    });
    this.apps.set(spec.key, app);
  }

  app(key: string): App {
    const a = this.apps.get(key);
    if (!a) throw new Error(`app ${key} not started`);
    return a;
  }

  /** Stops every app, then what the suite started, in reverse order; once, whoever asks first. */
  cleanup(): Promise<void> {
    this.cleaning ??= (async () => {
      await Promise.all(
        [...this.apps.values()].map((a) => {
          this.killedOnPurpose.add(a);
          return stopApp(a);
        }),
      );
      for (const s of this.started.reverse())
        await s.stop().catch((err: unknown) => console.error('[chaos] cleanup:', err));
    })();
    return this.cleaning;
  }
}

/** Work in the app's hands: messages in its queues, or (the API) outbox rows its relay has yet to publish. */
export async function backlog(deps: Deps, spec: AppSpec): Promise<number> {
  if (spec.backlog === 'none') return 0;
  if (spec.backlog === 'outbox') return (await pendingWork(deps.db).catch(() => ({ outbox: 0 }))).outbox;
  const depths = await queueDepthsFast(deps.management).catch(() => new Map<string, number>());
  return spec.backlog.reduce((n, q) => n + (depths.get(q) ?? 0), 0);
}
