// Prometheus Operator objects (monitoring.coreos.com/v1) from the plain Prometheus files, so a cluster
// run by the operator (kube-prometheus-stack) scrapes and alerts exactly as docker-compose.yml's
// Prometheus does: the operator ignores `prometheus.io/*` pod annotations and loads no rule file.
//  - infra/prometheus/prometheus.yml: one ServiceMonitor per app job (the job label stays the
//    Service's name, which is the app's: the rules match `job=~"<apps>"`), and one for the broker
//    with both endpoints of its jobs (`/metrics`, `/metrics/detailed` with the same families), the
//    job label set to the plain file's job name (`rabbitmq`, `rabbitmq-detailed`);
//  - infra/prometheus/rules/*.rules.yml: one PrometheusRule per file, the groups unchanged.
// generate.spec.ts fails when the committed infra/k8s/base/monitoring.yaml differs.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { APPS } from './k8s';
import { RABBITMQ_CLUSTER } from './operator';

const ROOT = path.resolve(__dirname, '../../..');
const PROMETHEUS_DIR = path.join(ROOT, 'infra/prometheus');

interface ScrapeJob {
  job_name: string;
  metrics_path?: string;
  params?: Record<string, string[]>;
  static_configs: Array<{ targets: string[] }>;
}
interface PrometheusConfig {
  global: { scrape_interval: string; scrape_timeout: string };
  scrape_configs: ScrapeJob[];
}

const labels = (name: string) => ({
  'app.kubernetes.io/name': name,
  'app.kubernetes.io/part-of': 'community-notifications',
});

/** The plain file's jobs: an app's job targets `<app>:<port>`, the broker's `rabbitmq:15692`. */
function plainConfig(): PrometheusConfig {
  return parse(readFileSync(path.join(PROMETHEUS_DIR, 'prometheus.yml'), 'utf8')) as PrometheusConfig;
}

export function monitoringResources(): object[] {
  const config = plainConfig();
  const timing = { interval: config.global.scrape_interval, scrapeTimeout: config.global.scrape_timeout };
  const out: object[] = [];
  const jobs = new Map(config.scrape_configs.map((j) => [j.job_name, j]));
  for (const app of APPS) {
    const job = jobs.get(app.name);
    if (!job) throw new Error(`infra/prometheus/prometheus.yml has no job for ${app.name}`);
    if (job.static_configs[0]?.targets.join() !== `${app.name}:${app.port}`)
      throw new Error(`prometheus.yml job ${app.name} does not target ${app.name}:${app.port}`);
    out.push({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name: app.name, labels: labels(app.name) },
      spec: {
        // The Service of apps/<app>.yaml; its port `http` serves /metrics. No jobLabel: the job is
        // the Service's name, as in the plain file. honorLabels stays false, as there: the
        // reconciler's own `job` label becomes `exported_job`, which the rules use.
        selector: { matchLabels: { 'app.kubernetes.io/name': app.name } },
        endpoints: [{ port: 'http', path: job.metrics_path ?? '/metrics', ...timing }],
      },
    });
  }
  const broker = ['rabbitmq', 'rabbitmq-detailed'].map((name) => {
    const job = jobs.get(name);
    if (!job) throw new Error(`infra/prometheus/prometheus.yml has no job ${name}`);
    return {
      // The RabbitmqCluster's client Service names the rabbitmq_prometheus port `prometheus` (15692).
      port: 'prometheus',
      path: job.metrics_path ?? '/metrics',
      ...(job.params ? { params: job.params } : {}),
      ...timing,
      relabelings: [{ action: 'replace', targetLabel: 'job', replacement: name }],
    };
  });
  out.push({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: RABBITMQ_CLUSTER, labels: labels(RABBITMQ_CLUSTER) },
    spec: {
      // The client Service the Cluster Operator creates (the headless `-nodes` Service has no
      // `prometheus` port, so it contributes no target): every node is scraped.
      selector: {
        matchLabels: { 'app.kubernetes.io/name': RABBITMQ_CLUSTER, 'app.kubernetes.io/component': 'rabbitmq' },
      },
      endpoints: broker,
    },
  });
  for (const file of ruleFiles()) {
    const rules = parse(readFileSync(path.join(PROMETHEUS_DIR, 'rules', file), 'utf8')) as { groups: object[] };
    const name = ruleName(file);
    out.push({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: { name, labels: labels(name) },
      spec: { groups: rules.groups },
    });
  }
  return out;
}

/**
 * A JSON patch for an overlay that does not deploy `app` (prod: the demo API): every rule that
 * lists it in a `job=~"a|b|…"` alternation loses it, each replace guarded by a `test` of the
 * expression it replaces (kustomize fails instead of patching the wrong rule). Applied to the
 * PrometheusRule of each rule file (target by name).
 */
export function rulesWithoutAppPatch(app: string): Array<{ file: string; ops: object[] }> {
  const out: Array<{ file: string; ops: object[] }> = [];
  for (const file of ruleFiles()) {
    const rules = parse(readFileSync(path.join(PROMETHEUS_DIR, 'rules', file), 'utf8')) as {
      groups: Array<{ rules: Array<{ expr: string }> }>;
    };
    const ops: object[] = [];
    rules.groups.forEach((g, gi) =>
      g.rules.forEach((r, ri) => {
        const expr = r.expr.replace(/job=~"([^"]*)"/g, (whole, alternation: string) => {
          const jobs = alternation.split('|');
          return jobs.includes(app) ? `job=~"${jobs.filter((j) => j !== app).join('|')}"` : whole;
        });
        if (expr === r.expr) return;
        const at = `/spec/groups/${gi}/rules/${ri}/expr`;
        ops.push({ op: 'test', path: at, value: r.expr }, { op: 'replace', path: at, value: expr });
      }),
    );
    if (ops.length > 0) out.push({ file, ops });
  }
  return out;
}

/** The PrometheusRule's name for a rule file. */
export const ruleName = (file: string): string => file.replace(/\.rules\.yml$/, '');

/** What prometheus.yml's `rule_files: /etc/prometheus/rules/*.rules.yml` loads. */
export function ruleFiles(): string[] {
  return readdirSync(path.join(PROMETHEUS_DIR, 'rules'))
    .filter((f) => f.endsWith('.rules.yml'))
    .sort();
}
