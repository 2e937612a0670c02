// The Kubernetes manifests as kubectl renders them (kustomize v5, the one a deploy uses), read back
// with the `yaml` package and checked for what an operator relies on: probes, limits, hardening,
// a PDB, a Service, a NetworkPolicy, and for each worker a KEDA ScaledObject on queues that exist.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
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
  return parseAllDocuments(stdout).map((d) => d.toJS() as Doc).filter(Boolean);
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
    if (pod.securityContext?.runAsNonRoot !== true || pod.securityContext?.seccompProfile?.type !== 'RuntimeDefault') say('pod securityContext: not runAsNonRoot with seccomp RuntimeDefault');
    const sc = c.securityContext ?? {};
    if (sc.readOnlyRootFilesystem !== true || sc.allowPrivilegeEscalation !== false || !(sc.capabilities?.drop ?? []).includes('ALL') || sc.runAsNonRoot !== true) {
      say('container securityContext: needs runAsNonRoot, readOnlyRootFilesystem, no privilege escalation, drop ALL');
    }
    const preStop = Number(c.lifecycle?.preStop?.sleep?.seconds ?? 0);
    if (!(drainSeconds > 0) || !(pod.terminationGracePeriodSeconds > preStop + drainSeconds)) say(`terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} not above preStop ${preStop} s + drain ${drainSeconds} s`);
    const envFrom = (c.envFrom ?? []) as Doc[];
    if (!envFrom.some((e) => e.configMapRef?.name === config?.metadata.name)) say('does not take the shared ConfigMap by reference');
    if (!envFrom.some((e) => e.secretRef?.name === `${name}-secrets`)) say(`does not take Secret ${name}-secrets by reference`);
    if (!of('PodDisruptionBudget').some((p) => matches(p.spec.selector?.matchLabels, labels))) say('no PodDisruptionBudget');
    if (!of('Service').some((s) => matches(s.spec.selector, labels) && s.spec.ports.some((p: Doc) => p.targetPort === 'http'))) say('no Service for its HTTP port');
    if (!of('NetworkPolicy').some((n) => n.metadata.name === name && matches(n.spec.podSelector?.matchLabels, labels))) say('no NetworkPolicy of its own');
    if (name === 'demo-community-api') continue;
    const scaled = of('ScaledObject').find((s) => s.spec.scaleTargetRef.name === name);
    if (!scaled) {
      say('a worker without a KEDA ScaledObject');
      continue;
    }
    const rabbit = (scaled.spec.triggers as Doc[]).filter((t) => t.type === 'rabbitmq');
    if (rabbit.length === 0) say('ScaledObject has no rabbitmq trigger');
    for (const t of rabbit) {
      if (!WORK_QUEUES.has(t.metadata.queueName)) say(`ScaledObject names queue "${t.metadata.queueName}", not in the topology`);
      if (t.metadata.mode !== 'QueueLength' || t.metadata.protocol !== 'http') say(`trigger on ${t.metadata.queueName}: not QueueLength over http`);
    }
    const consumes = SERVICE_ACCESS.find((a) => a.user === name)?.consumes ?? [];
    if (rabbit.map((t) => t.metadata.queueName).sort().join() !== [...consumes].sort().join()) say('ScaledObject queues differ from the queues it consumes (libs/contracts access.ts)');
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
    expect(docs.filter((d) => d.kind === 'Deployment').map((d) => d.metadata.name).sort()).toEqual(apps.sort());
    expect(docs.filter((d) => d.kind === 'Job').map((d) => d.metadata.name).sort()).toEqual(['db-migrate', 'rabbitmq-topology']);
  });

  it('gives every Deployment probes, limits, a hardened securityContext, a PDB, a Service, a NetworkPolicy, and every worker a ScaledObject on its queues', () => {
    expect(deploymentProblems(docs)).toEqual([]);
  });

  it('scales workers on the age of the messages too (a prometheus trigger: KEDA’s rabbitmq trigger has no age mode)', () => {
    for (const s of docs.filter((d) => d.kind === 'ScaledObject')) {
      expect(s.spec.triggers.find((t: Doc) => t.type === 'prometheus')?.metadata.query).toMatch(/messaging_publish_to_consume_lag_seconds_bucket/);
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
    broken.find((x) => x.kind === 'ScaledObject' && x.metadata.name === 'reconciler')!.spec.triggers[0].metadata.queueName = 'reconciler.nope';
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
    expect(defs.queues.map((q: Doc) => q.name).sort()).toEqual(planTopology(COMMUNITY_TOPOLOGY).queues.map((q) => q.name).sort());
    const users = (cm.data['users.tsv'] as string).trim().split('\n').map((l) => l.split('\t')[0]);
    expect(users).toEqual(expect.arrayContaining(SERVICE_ACCESS.map((a) => a.user)));
    const secrets = job.spec.template.spec.volumes.filter((v: Doc) => v.secret).map((v: Doc) => v.secret.secretName);
    expect(secrets.sort()).toEqual(users.map((u) => `rabbitmq-user-${u}`).sort());
  });
});

it('renders the platform (RabbitmqCluster, CloudNativePG Cluster, Redis) and the Messaging Topology Operator resources', async () => {
  const platform = await render('infra/k8s/platform');
  expect(platform.map((d) => d.kind).sort()).toEqual(['Cluster', 'Deployment', 'RabbitmqCluster', 'Service']);
  const operator = await render('infra/rabbitmq/operator');
  const count = (kind: string) => operator.filter((d) => d.kind === kind).length;
  const plan = planTopology(COMMUNITY_TOPOLOGY);
  expect([count('Queue'), count('Exchange'), count('Binding'), count('Policy')]).toEqual([plan.queues.length, plan.exchanges.length, plan.bindings.length + plan.exchangeBindings.length, plan.policies.length]);
  expect(count('User')).toBe(count('Permission'));
  expect(operator.filter((d) => d.kind === 'Queue').every((q) => q.spec.type === 'quorum' && q.spec.rabbitmqClusterReference.name === 'community-rabbitmq')).toBe(true);
});
