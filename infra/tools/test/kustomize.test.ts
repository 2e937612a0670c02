// The Kubernetes manifests as kubectl renders them (kustomize v5, the one a deploy uses), read back
// with the `yaml` package and checked for what an operator relies on: probes, limits, hardening,
// a PDB, a Service, a NetworkPolicy, and for each worker a KEDA ScaledObject on queues that exist;
// who may reach the data stores; the Prometheus Operator objects against infra/prometheus.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { COMMUNITY_TOPOLOGY, SERVICE_ACCESS } from '@community/contracts';
import { planTopology } from '@community/messaging';
import { APPS } from '../src';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../../..');
const WORK_QUEUES = new Set(COMMUNITY_TOPOLOGY.queues.map((q) => q.name));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = Record<string, any>;

async function render(dir: string): Promise<Doc[]> {
  const { stdout } = await run('kubectl', ['kustomize', path.join(ROOT, dir)], { maxBuffer: 64 * 1024 * 1024 });
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Doc)
    .filter(Boolean);
}

const matches = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  selector !== undefined && Object.entries(selector).every(([k, v]) => labels[k] === v);

/** What is missing for each Deployment of a rendered overlay; empty when everything holds. */
export function deploymentProblems(docs: Doc[]): string[] {
  const problems: string[] = [];
  const of = (kind: string) => docs.filter((d) => d.kind === kind);
  const config = of('ConfigMap').find((c) => c.metadata.name.startsWith('community-config'));
  const drainSeconds = Number(config?.data?.SHUTDOWN_TIMEOUT_MS) / 1000;
  for (const d of of('Deployment')) {
    const name: string = d.metadata.name;
    const pod = d.spec.template.spec;
    const labels = d.spec.template.metadata.labels;
    const c = pod.containers[0];
    const say = (what: string) => problems.push(`${name}: ${what}`);
    if (c.livenessProbe?.httpGet?.path !== '/healthz') say('no liveness probe on /healthz');
    if (c.readinessProbe?.httpGet?.path !== '/readyz') say('no readiness probe on /readyz');
    if (!c.startupProbe) say('no startup probe');
    if (!c.resources?.limits?.cpu || !c.resources?.limits?.memory) say('no cpu and memory limits');
    if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory) say('no cpu and memory requests');
    if (pod.securityContext?.runAsNonRoot !== true || pod.securityContext?.seccompProfile?.type !== 'RuntimeDefault')
      say('pod securityContext: not runAsNonRoot with seccomp RuntimeDefault');
    const sc = c.securityContext ?? {};
    if (
      sc.readOnlyRootFilesystem !== true ||
      sc.allowPrivilegeEscalation !== false ||
      !(sc.capabilities?.drop ?? []).includes('ALL') ||
      sc.runAsNonRoot !== true
    ) {
      say('container securityContext: needs runAsNonRoot, readOnlyRootFilesystem, no privilege escalation, drop ALL');
    }
    const preStop = Number(c.lifecycle?.preStop?.sleep?.seconds ?? 0);
    if (!(drainSeconds > 0) || !(pod.terminationGracePeriodSeconds > preStop + drainSeconds))
      say(
        `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} not above preStop ${preStop} s + drain ${drainSeconds} s`,
      );
    const envFrom = (c.envFrom ?? []) as Doc[];
    if (!envFrom.some((e) => e.configMapRef?.name === config?.metadata.name))
      say('does not take the shared ConfigMap by reference');
    if (!envFrom.some((e) => e.secretRef?.name === `${name}-secrets`))
      say(`does not take Secret ${name}-secrets by reference`);
    if (!of('PodDisruptionBudget').some((p) => matches(p.spec.selector?.matchLabels, labels)))
      say('no PodDisruptionBudget');
    if (
      !of('Service').some(
        (s) => matches(s.spec.selector, labels) && s.spec.ports.some((p: Doc) => p.targetPort === 'http'),
      )
    )
      say('no Service for its HTTP port');
    if (!of('NetworkPolicy').some((n) => n.metadata.name === name && matches(n.spec.podSelector?.matchLabels, labels)))
      say('no NetworkPolicy of its own');
    if (name === 'demo-community-api') continue;
    const scaled = of('ScaledObject').find((s) => s.spec.scaleTargetRef.name === name);
    if (!scaled) {
      say('a worker without a KEDA ScaledObject');
      continue;
    }
    const rabbit = (scaled.spec.triggers as Doc[]).filter((t) => t.type === 'rabbitmq');
    if (rabbit.length === 0) say('ScaledObject has no rabbitmq trigger');
    for (const t of rabbit) {
      if (!WORK_QUEUES.has(t.metadata.queueName))
        say(`ScaledObject names queue "${t.metadata.queueName}", not in the topology`);
      if (t.metadata.mode !== 'QueueLength' || t.metadata.protocol !== 'http')
        say(`trigger on ${t.metadata.queueName}: not QueueLength over http`);
    }
    const consumes = SERVICE_ACCESS.find((a) => a.user === name)?.consumes ?? [];
    if (
      rabbit
        .map((t) => t.metadata.queueName)
        .sort()
        .join() !== [...consumes].sort().join()
    )
      say('ScaledObject queues differ from the queues it consumes (libs/contracts access.ts)');
  }
  return problems;
}

describe.each(['overlays/dev', 'overlays/prod'])('infra/k8s/%s', (overlay) => {
  let docs: Doc[];
  beforeAll(async () => {
    docs = await render(`infra/k8s/${overlay}`);
  });

  it('renders a Deployment for every app (prod: but the demo API, see prod-without-demo.test.ts), and both Jobs', () => {
    const apps = APPS.map((a) => a.name).filter((name) => overlay !== 'overlays/prod' || name !== 'demo-community-api');
    expect(
      docs
        .filter((d) => d.kind === 'Deployment')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(apps.sort());
    expect(
      docs
        .filter((d) => d.kind === 'Job')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(['db-migrate', 'rabbitmq-topology']);
  });

  it('gives every Deployment probes, limits, a hardened securityContext, a PDB, a Service, a NetworkPolicy, and every worker a ScaledObject on its queues', () => {
    expect(deploymentProblems(docs)).toEqual([]);
  });

  it('scales workers on the age of the messages too (a prometheus trigger: KEDA’s rabbitmq trigger has no age mode)', () => {
    for (const s of docs.filter((d) => d.kind === 'ScaledObject')) {
      expect(s.spec.triggers.find((t: Doc) => t.type === 'prometheus')?.metadata.query).toMatch(
        /messaging_publish_to_consume_lag_seconds_bucket/,
      );
    }
  });

  it('the checks fail on a Deployment without probes, limits or hardening, and on a ScaledObject on an unknown queue', () => {
    const broken = structuredClone(docs);
    const d = broken.find((x) => x.kind === 'Deployment' && x.metadata.name === 'email-service')!;
    const c = d.spec.template.spec.containers[0];
    delete c.readinessProbe;
    delete c.resources.limits;
    c.securityContext.readOnlyRootFilesystem = false;
    d.spec.template.spec.terminationGracePeriodSeconds = 10;
    broken.find(
      (x) => x.kind === 'ScaledObject' && x.metadata.name === 'reconciler',
    )!.spec.triggers[0].metadata.queueName = 'reconciler.nope';
    expect(deploymentProblems(broken)).toEqual([
      'email-service: no readiness probe on /readyz',
      'email-service: no cpu and memory limits',
      'email-service: container securityContext: needs runAsNonRoot, readOnlyRootFilesystem, no privilege escalation, drop ALL',
      expect.stringMatching(/^email-service: terminationGracePeriodSeconds 10 not above/),
      'reconciler: ScaledObject names queue "reconciler.nope", not in the topology',
      'reconciler: ScaledObject queues differ from the queues it consumes (libs/contracts access.ts)',
    ]);
  });

  it('feeds the topology Job the generated definitions (without users) and a password Secret per broker user', () => {
    const job = docs.find((d) => d.kind === 'Job' && d.metadata.name === 'rabbitmq-topology')!;
    const cmName = job.spec.template.spec.volumes.find((v: Doc) => v.name === 'topology').configMap.name;
    const cm = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === cmName)!;
    const defs = JSON.parse(cm.data['definitions.json']);
    expect(defs.users).toBeUndefined();
    expect(defs.queues.map((q: Doc) => q.name).sort()).toEqual(
      planTopology(COMMUNITY_TOPOLOGY)
        .queues.map((q) => q.name)
        .sort(),
    );
    const users = (cm.data['users.tsv'] as string)
      .trim()
      .split('\n')
      .map((l) => l.split('\t')[0]);
    expect(users).toEqual(expect.arrayContaining(SERVICE_ACCESS.map((a) => a.user)));
    const secrets = job.spec.template.spec.volumes.filter((v: Doc) => v.secret).map((v: Doc) => v.secret.secretName);
    expect(secrets.sort()).toEqual(users.map((u) => `rabbitmq-user-${u}`).sort());
  });
});

it('renders the platform (RabbitmqCluster, CloudNativePG Cluster, Redis) and the Messaging Topology Operator resources', async () => {
  const platform = await render('infra/k8s/platform');
  expect(platform.map((d) => d.kind).sort()).toEqual([
    'Cluster',
    'Deployment',
    'NetworkPolicy',
    'NetworkPolicy',
    'NetworkPolicy',
    'RabbitmqCluster',
    'Service',
  ]);
  const operator = await render('infra/rabbitmq/operator');
  const count = (kind: string) => operator.filter((d) => d.kind === kind).length;
  const plan = planTopology(COMMUNITY_TOPOLOGY);
  expect([count('Queue'), count('Exchange'), count('Binding'), count('Policy')]).toEqual([
    plan.queues.length,
    plan.exchanges.length,
    plan.bindings.length + plan.exchangeBindings.length,
    plan.policies.length,
  ]);
  expect(count('User')).toBe(count('Permission'));
  expect(
    operator
      .filter((d) => d.kind === 'Queue')
      .every((q) => q.spec.type === 'quorum' && q.spec.rabbitmqClusterReference.name === 'community-rabbitmq'),
  ).toBe(true);
});

/** A pod as NetworkPolicies see it: its labels and its namespace's name. */
interface Peer {
  labels: Record<string, string>;
  namespace: string;
}

const selects = (selector: Doc | undefined, labels: Record<string, string>) =>
  selector !== undefined &&
  Object.entries((selector.matchLabels ?? {}) as Record<string, string>).every(([k, v]) => labels[k] === v) &&
  ((selector.matchExpressions ?? []) as Doc[]).every((e) =>
    e.operator === 'In'
      ? e.values.includes(labels[e.key])
      : e.operator === 'NotIn'
        ? !e.values.includes(labels[e.key])
        : e.operator === 'Exists'
          ? e.key in labels
          : !(e.key in labels),
  );

/** Does one rule's peer list (from / to) admit `peer`, for policies living in namespace `ns`? */
function peerAdmitted(peers: Doc[] | undefined, peer: Peer, ns: string): boolean {
  if (peers === undefined) return true; // no from/to: every peer
  return peers.some((p) => {
    if (p.ipBlock) return false; // pods are not reached through ipBlocks here
    const nsOk = p.namespaceSelector
      ? selects(p.namespaceSelector, { 'kubernetes.io/metadata.name': peer.namespace })
      : peer.namespace === ns;
    const podOk = p.podSelector ? selects(p.podSelector, peer.labels) : true;
    return nsOk && podOk;
  });
}

const portAdmitted = (ports: Doc[] | undefined, port: number) =>
  ports === undefined ||
  ports.some(
    (p) =>
      (p.protocol ?? 'TCP') === 'TCP' &&
      (p.port === port || (p.endPort !== undefined && p.port <= port && port <= p.endPort)),
  );

/**
 * Whether the NetworkPolicies of namespace `ns` let `from` open a TCP connection to `to` on `port`:
 * `from`'s egress (when `from` is in `ns`) and `to`'s ingress must both allow it; a pod no policy of
 * a direction selects is open in that direction (Kubernetes semantics).
 */
export function connects(policies: Doc[], ns: string, from: Peer, to: Peer, port: number): boolean {
  const side = (type: 'Ingress' | 'Egress', pod: Peer, other: Peer) => {
    if (pod.namespace !== ns) return true; // another namespace's policies are not rendered here
    const mine = policies.filter(
      (p) => (p.spec.policyTypes ?? ['Ingress']).includes(type) && selects(p.spec.podSelector, pod.labels),
    );
    if (mine.length === 0) return true;
    const rules = mine.flatMap((p) => (type === 'Ingress' ? p.spec.ingress : p.spec.egress) ?? []) as Doc[];
    return rules.some(
      (r) => peerAdmitted(type === 'Ingress' ? r.from : r.to, other, ns) && portAdmitted(r.ports, port),
    );
  };
  return side('Egress', from, to) && side('Ingress', to, from);
}

describe('NetworkPolicies of the data stores (the dev overlay and the platform in one namespace)', () => {
  const NS = 'community-dev';
  let policies: Doc[];
  let podLabels: Map<string, Record<string, string>>;
  beforeAll(async () => {
    const [dev, platform] = await Promise.all([render('infra/k8s/overlays/dev'), render('infra/k8s/platform')]);
    policies = [...dev, ...platform].filter((d) => d.kind === 'NetworkPolicy');
    podLabels = new Map();
    for (const d of dev.filter((x) => x.kind === 'Deployment' || x.kind === 'Job'))
      podLabels.set(d.metadata.name, d.spec.template.metadata.labels);
  });
  const pod = (name: string): Peer => ({ labels: podLabels.get(name)!, namespace: NS });
  const store = {
    redis: { labels: { 'app.kubernetes.io/name': 'redis' }, namespace: NS },
    rabbitmq: {
      labels: { 'app.kubernetes.io/name': 'community-rabbitmq', 'app.kubernetes.io/component': 'rabbitmq' },
      namespace: NS,
    },
    postgres: { labels: { 'cnpg.io/cluster': 'community-pg', 'cnpg.io/instanceRole': 'primary' }, namespace: NS },
  };
  const other = (namespace: string): Peer => ({ labels: { 'app.kubernetes.io/name': 'anything' }, namespace });
  const reaching = (to: Peer, port: number) =>
    [...podLabels.keys()].filter((name) => connects(policies, NS, pod(name), to, port)).sort();

  it('Redis: only feed-service and the reconciler (the reconciler has its egress rule), nobody from another namespace', () => {
    expect(reaching(store.redis, 6379)).toEqual(['feed-service', 'reconciler']);
    expect(connects(policies, NS, other('default'), store.redis, 6379)).toBe(false);
    expect(
      connects(
        policies,
        NS,
        { ...store.redis, labels: { 'app.kubernetes.io/name': 'some-debug-pod' } },
        store.redis,
        6379,
      ),
    ).toBe(false);
  });

  it('RabbitMQ: AMQP for the apps, the management API for the apps, the topology Job and KEDA, metrics for Prometheus, everything between nodes', () => {
    const apps = APPS.map((a) => a.name).sort();
    expect(reaching(store.rabbitmq, 5672)).toEqual(apps);
    expect(reaching(store.rabbitmq, 15672)).toEqual([...apps, 'rabbitmq-topology'].sort());
    expect(connects(policies, NS, other('keda'), store.rabbitmq, 15672)).toBe(true);
    expect(connects(policies, NS, other('keda'), store.rabbitmq, 5672)).toBe(false);
    expect(connects(policies, NS, other('monitoring'), store.rabbitmq, 15692)).toBe(true);
    expect(connects(policies, NS, other('default'), store.rabbitmq, 5672)).toBe(false);
    expect(connects(policies, NS, store.rabbitmq, store.rabbitmq, 25672)).toBe(true);
  });

  it('Postgres: the apps and the migration Job, the CloudNativePG operator, the other instances', () => {
    expect(reaching(store.postgres, 5432)).toEqual([...APPS.map((a) => a.name), 'db-migrate'].sort());
    expect(connects(policies, NS, other('cnpg-system'), store.postgres, 8000)).toBe(true);
    expect(connects(policies, NS, other('default'), store.postgres, 5432)).toBe(false);
    expect(connects(policies, NS, other('monitoring'), store.postgres, 5432)).toBe(false);
    expect(connects(policies, NS, store.postgres, store.postgres, 5432)).toBe(true);
  });

  it('the check sees a missing rule: without its Redis egress, the reconciler cannot reach Redis', () => {
    const copy = structuredClone(policies);
    const reconciler = copy.find((p) => p.metadata.name === 'reconciler')!;
    reconciler.spec.egress = reconciler.spec.egress.filter((r: Doc) => !JSON.stringify(r.to).includes('"redis"'));
    expect(connects(copy, NS, pod('reconciler'), store.redis, 6379)).toBe(false);
    expect(connects(policies, NS, pod('reconciler'), store.redis, 6379)).toBe(true);
  });
});

describe('Prometheus Operator objects (infra/k8s/base/monitoring.yaml) match infra/prometheus', () => {
  let dev: Doc[];
  let prod: Doc[];
  beforeAll(async () => {
    [dev, prod] = await Promise.all([render('infra/k8s/overlays/dev'), render('infra/k8s/overlays/prod')]);
  });

  it('a ServiceMonitor per deployed app, on its Service’s http port, and one for the broker with both jobs of prometheus.yml', () => {
    const plain = parse(readFileSync(path.join(ROOT, 'infra/prometheus/prometheus.yml'), 'utf8')) as {
      scrape_configs: Array<{ job_name: string; metrics_path?: string; params?: unknown }>;
    };
    for (const docs of [dev, prod]) {
      const monitors = docs.filter((d) => d.kind === 'ServiceMonitor');
      const deployed = docs.filter((d) => d.kind === 'Deployment').map((d) => d.metadata.name);
      for (const app of deployed) {
        const svc = docs.find((d) => d.kind === 'Service' && d.metadata.name === app)!;
        const sm = monitors.find((m) => matches(m.spec.selector.matchLabels, svc.metadata.labels));
        expect({ app, endpoints: sm?.spec.endpoints }).toEqual({
          app,
          endpoints: [expect.objectContaining({ port: 'http', path: '/metrics' })],
        });
        expect(svc.spec.ports.map((p: Doc) => p.name)).toContain('http');
      }
      // No ServiceMonitor for an app that is not deployed (prod: the demo API).
      expect(monitors.map((m) => m.metadata.name).sort()).toEqual([...deployed, 'community-rabbitmq'].sort());
      const broker = monitors.find((m) => m.metadata.name === 'community-rabbitmq')!;
      const jobs = broker.spec.endpoints.map((e: Doc) => ({
        job: e.relabelings.find((r: Doc) => r.targetLabel === 'job').replacement,
        path: e.path,
        params: e.params,
      }));
      expect(jobs).toEqual(
        plain.scrape_configs
          .filter((j) => j.job_name.startsWith('rabbitmq'))
          .map((j) => ({ job: j.job_name, path: j.metrics_path ?? '/metrics', params: j.params })),
      );
    }
  });

  it('a PrometheusRule with exactly the groups of each rule file (prod: the demo API, not deployed, not watched)', () => {
    const files = readdirSync(path.join(ROOT, 'infra/prometheus/rules')).filter((f) => f.endsWith('.rules.yml'));
    for (const [overlay, docs] of [
      ['dev', dev],
      ['prod', prod],
    ] as const) {
      const rules = docs.filter((d) => d.kind === 'PrometheusRule');
      expect(rules.map((r) => r.metadata.name).sort()).toEqual(files.map((f) => f.replace('.rules.yml', '')).sort());
      for (const f of files) {
        const plain = parse(readFileSync(path.join(ROOT, 'infra/prometheus/rules', f), 'utf8')) as Doc;
        if (overlay === 'prod') {
          for (const r of plain.groups.flatMap((g: Doc) => g.rules))
            r.expr = r.expr.replace('job=~"demo-community-api|', 'job=~"');
        }
        expect(rules.find((r) => r.metadata.name === f.replace('.rules.yml', ''))!.spec.groups).toEqual(plain.groups);
      }
    }
    expect(JSON.stringify(prod.filter((d) => d.kind === 'PrometheusRule'))).not.toContain('demo-community-api');
  });

  it('KEDA’s age triggers do not hide an empty answer (ignoreNullValues "false"), fall back to 0 only from the app’s own queue sample, and read only their namespace', async () => {
    const base = await render('infra/k8s/base');
    const baseQuery = (name: string) =>
      base
        .find((d) => d.kind === 'ScaledObject' && d.metadata.name === name)!
        .spec.triggers.find((x: Doc) => x.type === 'prometheus').metadata.query as string;
    for (const [docs, ns] of [
      [dev, 'community-dev'],
      [prod, 'community'],
    ] as const) {
      for (const s of docs.filter((d) => d.kind === 'ScaledObject')) {
        const name = s.metadata.name as string;
        const t = s.spec.triggers.find((x: Doc) => x.type === 'prometheus');
        expect({ name, ignoreNullValues: t.metadata.ignoreNullValues }).toEqual({ name, ignoreNullValues: 'false' });
        expect(baseQuery(name)).not.toMatch(/vector\(/);
        expect(baseQuery(name)).toMatch(
          new RegExp(` or max\\(messaging_queue_messages\\{service="${name}",queue=~"[^"]+"\\}\\) \\* 0$`),
        );
        // The overlay's query is the base's (the one the scrape test runs) with the namespace in both selectors.
        expect({ name, query: t.metadata.query }).toEqual({
          name,
          query: baseQuery(name)
            .replace('{queue=~', `{namespace="${ns}",queue=~`)
            .replace('{service=', `{namespace="${ns}",service=`),
        });
        // The other triggers are the base's.
        const others = (so: Doc) => so.spec.triggers.filter((x: Doc) => x.type !== 'prometheus');
        expect(others(s)).toEqual(others(base.find((d) => d.kind === 'ScaledObject' && d.metadata.name === name)!));
      }
    }
  });
});
