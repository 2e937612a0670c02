// The Postgres connection budget (docs/DEPLOY.md "Connection budget"): at every app's maximum
// replica count, plus the pods a rolling update adds, plus the migrations and the operators, the
// connections the apps may open stay within the `max_connections` of the CloudNativePG Cluster in
// infra/k8s/platform. Rendered with kubectl's kustomize, as a deploy does (kustomize.test.ts).
//
// What an app may open is counted from its code, not assumed: each app's pool size comes from its
// own config loader given the rendered ConfigMap (defaults in apps/<app>/src/config.ts), and every
// extra connection (the outbox relay's LISTEN, the SSE hub's LISTEN) is listed in CONNECTIONS below.
// A check over the apps' sources fails when a pool or a LISTEN connection appears that the table
// does not count, so the table cannot drift from the code unnoticed.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { loadEmailConfig } from '../../../apps/email-service/src';
import { loadFeedConfig } from '../../../apps/feed-service/src';
import { loadNotificationConfig } from '../../../apps/notification-service/src';
import { loadPushConfig } from '../../../apps/push-service/src';
import { loadReconcilerConfig } from '../../../apps/reconciler/src';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../../..');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = Record<string, any>;
type Env = Record<string, string>;

async function render(dir: string): Promise<Doc[]> {
  const { stdout } = await run('kubectl', ['kustomize', path.join(ROOT, dir)], { maxBuffer: 64 * 1024 * 1024 });
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Doc)
    .filter(Boolean);
}

/**
 * Per app: the pool's maximum (from the app's config, as the app computes it) and the connections
 * it opens outside the pool. `poolCall` is the argument text of the app's one createPgPool call in
 * apps/<app>/src/service.ts: the source check below requires it verbatim, so a changed formula
 * fails here instead of being counted wrong.
 *
 * Not counted: transactions/cancel connections (libs/db transaction.ts `cancelBackend`). One lives
 * for a single `pg_cancel_backend` round trip after a handler's deadline, is best effort, and when
 * Postgres refuses it the transaction's statement_timeout ends the statement anyway; the operator
 * headroom absorbs the few that overlap.
 */
const CONNECTIONS: Record<string, { poolMax(env: Env): number; poolCall: string; outside: Record<string, number> }> = {
  'notification-service': {
    poolMax: (env) => loadNotificationConfig(env).DATABASE_POOL_MAX,
    poolCall: 'config.DATABASE_URL, { max: config.DATABASE_POOL_MAX,',
    // libs/outbox listener.ts (the relay's wake-up) and src/sse/hub.ts (the inbox channel).
    outside: { 'outbox relay LISTEN': 1, 'SSE hub LISTEN': 1 },
  },
  'email-service': {
    poolMax: (env) => Math.min(20, loadEmailConfig(env).EMAIL_CONSUMER_CONCURRENCY + 4),
    poolCall: 'config.DATABASE_URL, { max: Math.min(20, config.EMAIL_CONSUMER_CONCURRENCY + 4),',
    outside: {},
  },
  'feed-service': {
    poolMax: (env) => loadFeedConfig(env).DATABASE_POOL_MAX,
    poolCall: 'config.DATABASE_URL, { max: config.DATABASE_POOL_MAX,',
    outside: {},
  },
  'push-service': {
    poolMax: (env) => Math.min(20, loadPushConfig(env).PUSH_CONSUMER_CONCURRENCY + 4),
    poolCall: 'config.DATABASE_URL, { max: Math.min(20, config.PUSH_CONSUMER_CONCURRENCY + 4),',
    outside: {},
  },
  reconciler: {
    // The scheduler's job locks are pool connections (libs/db scheduler/lock.ts): inside the pool.
    poolMax: (env) => loadReconcilerConfig(env).DATABASE_POOL_MAX,
    poolCall: 'config.DATABASE_URL, { max: config.DATABASE_POOL_MAX,',
    outside: { 'outbox relay LISTEN': 1 },
  },
  'demo-community-api': {
    poolMax: () => 10,
    poolCall: 'config.DATABASE_URL, { max: 10,',
    outside: { 'outbox relay LISTEN': 1 },
  },
};

/** `prisma migrate deploy` (the db-migrate Job): the schema engine works over one connection, which holds its advisory lock. */
export const MIGRATE_CONNECTIONS_PER_POD = 1;
/**
 * Regular slots kept for the CloudNativePG instance manager (its status probes, the metrics
 * exporter's queries, backups) and an operator's psql sessions. They connect as the superuser, so
 * they could also take the reserved slots, but those stay for an emergency session.
 */
export const OPERATOR_HEADROOM = 10;

export interface BudgetRow {
  name: string;
  /** Pods at the peak: the ScaledObject's maxReplicaCount (or the Deployment's replicas) plus the rolling update's surge. */
  pods: number;
  maxReplicas: number;
  surge: number;
  perPod: number;
  detail: string;
  total: number;
}

export interface Budget {
  rows: BudgetRow[];
  maxConnections: number;
  superuserReserved: number;
  /** Slots the non-superuser roles can have: max_connections − superuser_reserved_connections. */
  available: number;
  needed: number;
  problems: string[];
}

const surgeOf = (d: Doc, replicas: number): number => {
  const s = d.spec.strategy?.rollingUpdate?.maxSurge ?? '25%';
  if (d.spec.strategy?.type === 'Recreate') return 0;
  return typeof s === 'number' ? s : Math.ceil((replicas * Number(String(s).replace('%', ''))) / 100);
};

/** The budget of a rendered overlay against a rendered platform (its CloudNativePG Cluster). */
export function connectionBudget(apps: Doc[], platform: Doc[]): Budget {
  const problems: string[] = [];
  const cluster = platform.find((d) => d.kind === 'Cluster' && d.apiVersion?.startsWith('postgresql.cnpg.io/'));
  const params: Record<string, string> = cluster?.spec?.postgresql?.parameters ?? {};
  const maxConnections = Number(params.max_connections);
  const superuserReserved = Number(params.superuser_reserved_connections);
  if (!Number.isInteger(maxConnections))
    problems.push('the CloudNativePG Cluster sets no postgresql.parameters.max_connections');
  if (!Number.isInteger(superuserReserved))
    problems.push('the CloudNativePG Cluster sets no postgresql.parameters.superuser_reserved_connections');

  const config = apps.find((d) => d.kind === 'ConfigMap' && d.metadata.name.startsWith('community-config'));
  // The ConfigMap as the apps read it, without NODE_ENV: production mode would also demand the
  // secrets (URLs, keys), which the pool sizes do not depend on.
  const shared: Env = { ...(config?.data ?? {}) };
  delete shared.NODE_ENV;
  const rows: BudgetRow[] = [];
  for (const d of apps.filter((x) => x.kind === 'Deployment')) {
    const name: string = d.metadata.name;
    const model = CONNECTIONS[name];
    if (!model) {
      problems.push(
        `Deployment ${name}: not in the connection table (CONNECTIONS in connection-budget.test.ts); count its pools`,
      );
      continue;
    }
    const env: Env = { ...shared };
    for (const e of (d.spec.template.spec.containers[0].env ?? []) as Doc[])
      if (typeof e.value === 'string') env[e.name] = e.value;
    const scaled = apps.find((s) => s.kind === 'ScaledObject' && s.spec.scaleTargetRef.name === name);
    const maxReplicas = Math.max(Number(d.spec.replicas ?? 1), Number(scaled?.spec.maxReplicaCount ?? 0));
    const surge = surgeOf(d, maxReplicas);
    const pool = model.poolMax(env);
    const outside = Object.values(model.outside).reduce((a, b) => a + b, 0);
    const detail = [`pool ${pool}`, ...Object.entries(model.outside).map(([what, n]) => `${what} ${n}`)].join(' + ');
    rows.push({
      name,
      maxReplicas,
      surge,
      pods: maxReplicas + surge,
      perPod: pool + outside,
      detail,
      total: (maxReplicas + surge) * (pool + outside),
    });
  }
  for (const job of apps.filter((x) => x.kind === 'Job' && x.metadata.name === 'db-migrate')) {
    const pods = Number(job.spec.parallelism ?? 1);
    rows.push({
      name: 'db-migrate Job',
      maxReplicas: pods,
      surge: 0,
      pods,
      perPod: MIGRATE_CONNECTIONS_PER_POD,
      detail: 'prisma migrate deploy',
      total: pods * MIGRATE_CONNECTIONS_PER_POD,
    });
  }
  rows.push({
    name: 'operator headroom',
    maxReplicas: 1,
    surge: 0,
    pods: 1,
    perPod: OPERATOR_HEADROOM,
    detail: 'CloudNativePG instance manager, exporter, psql',
    total: OPERATOR_HEADROOM,
  });

  const needed = rows.reduce((a, r) => a + r.total, 0);
  const available = maxConnections - superuserReserved;
  if (!(needed <= available)) {
    problems.push(
      `connections needed at maximum replicas ${needed} exceed max_connections ${maxConnections} − superuser_reserved_connections ${superuserReserved} = ${available}: ` +
        rows.map((r) => `${r.name} ${r.pods} × ${r.perPod} (${r.detail}) = ${r.total}`).join('; '),
    );
  }
  return { rows, maxConnections, superuserReserved, available, needed, problems };
}

/** The budget as the rows of docs/DEPLOY.md "Connection budget" (after its header row). */
export function budgetTable(budget: Budget): string[] {
  return [
    ...budget.rows.map(
      (r) =>
        `| ${r.name} | ${r.maxReplicas}${r.surge ? ` + ${r.surge} surge` : ''} | ${r.perPod}: ${r.detail} | ${r.total} |`,
    ),
    `| **needed** | | | **${budget.needed}** |`,
    `| **available**: max_connections ${budget.maxConnections} − superuser_reserved_connections ${budget.superuserReserved} | | | **${budget.available}** |`,
  ];
}

/** Where an app's sources open a database connection, by kind: what the table must account for. */
function connectionSites(app: string): { pools: string[]; listens: number; clients: number } {
  const dir = path.join(ROOT, 'apps', app, 'src');
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter(
    (f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'),
  );
  const pools: string[] = [];
  let listens = 0;
  let clients = 0;
  for (const f of files) {
    const src = readFileSync(path.join(dir, f), 'utf8');
    // Whitespace is dropped on both sides, so a formatter's line breaks do not change the match.
    for (const m of src.matchAll(/createPgPool\(([^;]*)/g)) pools.push(m[1].replace(/\s+/g, ''));
    // The outbox relay opens its LISTEN connection itself (libs/outbox listener.ts).
    listens += (src.match(/createListenClient\(|createRelay\(/g) ?? []).length;
    clients += (src.match(/new pg\.(Pool|Client)\(|new (Pool|Client)\(|createPrisma\(|new PrismaPg\(/g) ?? []).length;
  }
  return { pools, listens, clients };
}

describe('the Postgres connection budget (docs/DEPLOY.md "Connection budget")', () => {
  let prod: Doc[];
  let platform: Doc[];
  beforeAll(async () => {
    [prod, platform] = await Promise.all([render('infra/k8s/overlays/prod'), render('infra/k8s/platform')]);
  }, 60_000);

  it('the table counts every pool and LISTEN connection each app opens', () => {
    for (const [app, model] of Object.entries(CONNECTIONS)) {
      const sites = connectionSites(app);
      expect({
        app,
        pools: sites.pools.length,
        poolCallCounted: sites.pools.some((p) => p.startsWith(model.poolCall.replace(/\s+/g, ''))),
        clients: sites.clients,
      }).toEqual({
        app,
        pools: 1,
        poolCallCounted: true,
        clients: 0,
      });
      expect({ app, listens: sites.listens }).toEqual({ app, listens: Object.keys(model.outside).length });
    }
  });

  it('the prod overlay at maximum replicas fits within max_connections, with headroom for the operators and migrations', () => {
    const budget = connectionBudget(prod, platform);
    expect(budget.rows.map((r) => r.name).sort()).toEqual([
      'db-migrate Job',
      'email-service',
      'feed-service',
      'notification-service',
      'operator headroom',
      'push-service',
      'reconciler',
    ]);
    expect(budget.problems).toEqual([]);
  });

  it('docs/DEPLOY.md "Connection budget" shows these figures', () => {
    const docs = readFileSync(path.join(ROOT, 'docs/DEPLOY.md'), 'utf8');
    const section = docs.slice(
      docs.indexOf('\n## Connection budget'),
      docs.indexOf('\n## ', docs.indexOf('\n## Connection budget') + 1),
    );
    const shown = section
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.startsWith('| what ') && !l.startsWith('|---'));
    expect(shown.slice(0, budgetTable(connectionBudget(prod, platform)).length)).toEqual(
      budgetTable(connectionBudget(prod, platform)),
    );
  });

  it('fails naming the numbers when a replica count exceeds the budget', () => {
    const raised = structuredClone(prod);
    const scaled = raised.find((d) => d.kind === 'ScaledObject' && d.metadata.name === 'feed-service');
    if (!scaled) throw new Error('the prod overlay has no feed-service ScaledObject');
    scaled.spec.maxReplicaCount = 60;
    const budget = connectionBudget(raised, platform);
    expect(budget.problems).toHaveLength(1);
    expect(budget.problems[0]).toMatch(
      new RegExp(
        `connections needed at maximum replicas ${budget.needed} exceed max_connections ${budget.maxConnections} − superuser_reserved_connections ${budget.superuserReserved} = ${budget.available}: `,
      ),
    );
    expect(budget.problems[0]).toContain('feed-service 61 × 10 (pool 10) = 610');
  });

  it('fails when the Cluster leaves max_connections to the default', () => {
    const bare = structuredClone(platform);
    for (const d of bare) if (d.kind === 'Cluster') delete d.spec.postgresql.parameters.max_connections;
    expect(connectionBudget(prod, bare).problems).toContain(
      'the CloudNativePG Cluster sets no postgresql.parameters.max_connections',
    );
  });
});
