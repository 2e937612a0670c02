// Every object kubectl's kustomize renders for a deploy (both overlays and the platform), validated
// against the published schemas offline: Kubernetes' own (kubernetes-models), KEDA's CRDs
// (@kubernetes-models/keda) and the Prometheus Operator's (@kubernetes-models/prometheus-operator),
// by ./../src/validate-schemas.mjs under node (the packages are ES modules only). The RabbitMQ
// Cluster Operator's RabbitmqCluster and CloudNativePG's Cluster have no model package on npm:
// they are the only objects left unvalidated, and the test says so by name.
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../../..');
const VALIDATOR = path.join(__dirname, '../src/validate-schemas.mjs');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = Record<string, any>;
interface Result {
  id: string;
  model: string | null;
  errors: string | null;
}

async function render(dir: string): Promise<Doc[]> {
  const { stdout } = await run('kubectl', ['kustomize', path.join(ROOT, dir)], { maxBuffer: 64 * 1024 * 1024 });
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Doc)
    .filter(Boolean);
}

function validate(docs: Doc[]): Promise<Result[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [VALIDATOR], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as Result[])
        : reject(new Error(`validate-schemas.mjs exited ${code}: ${err}`)),
    );
    child.stdin.end(JSON.stringify(docs));
  });
}

/** The kinds no model package covers (npm has none for these operators' CRDs). */
const UNMODELLED = ['postgresql.cnpg.io/v1 Cluster', 'rabbitmq.com/v1beta1 RabbitmqCluster'];

describe.each(['overlays/dev', 'overlays/prod', 'platform'])('infra/k8s/%s', (dir) => {
  let docs: Doc[];
  let results: Result[];
  beforeAll(async () => {
    docs = await render(`infra/k8s/${dir}`);
    results = await validate(docs);
  }, 60_000);

  it('every rendered object is valid against its published schema', () => {
    expect(results.filter((r) => r.errors !== null).map((r) => `${r.id}: ${r.errors}`)).toEqual([]);
    expect(results).toHaveLength(docs.length);
  });

  it('only the operators without a model package are left unvalidated', () => {
    const unvalidated = results.filter((r) => r.model === null).map((r) => r.id.replace(/\/[^/]*$/, ''));
    expect(unvalidated.filter((u) => !UNMODELLED.includes(u))).toEqual([]);
    const kinds = new Set(results.filter((r) => r.model !== null).map((r) => r.id.split(' ')[1].split('/')[0]));
    if (dir !== 'platform')
      expect([...kinds]).toEqual(
        expect.arrayContaining([
          'Deployment',
          'NetworkPolicy',
          'ScaledObject',
          'TriggerAuthentication',
          'ServiceMonitor',
          'PrometheusRule',
          'Job',
        ]),
      );
    else expect(unvalidated.sort()).toEqual(UNMODELLED);
  });
});

it('the validation fails on objects that break the schemas (a KEDA threshold as a number, a bad scrape interval, replicas as text)', async () => {
  const docs = await render('infra/k8s/overlays/prod');
  const broken = structuredClone(docs);
  const find = (kind: string, name: string) => broken.find((d) => d.kind === kind && d.metadata.name === name)!;
  find('Deployment', 'email-service').spec.replicas = 'two';
  find('ScaledObject', 'reconciler').spec.triggers.find((t: Doc) => t.type === 'prometheus').metadata.threshold = 30;
  find('ServiceMonitor', 'community-rabbitmq').spec.endpoints[0].interval = 'fifteen seconds';
  find('PrometheusRule', 'community').spec.groups[0].rules[0].for = 'ten minutes';
  find('NetworkPolicy', 'reconciler').spec.egress[0].ports[0].protocol = 'ICMP';
  const bad = (await validate(broken)).filter((r) => r.errors !== null).map((r) => r.id);
  expect(bad.sort()).toEqual(
    [
      'apps/v1 Deployment/email-service',
      'keda.sh/v1alpha1 ScaledObject/reconciler',
      'monitoring.coreos.com/v1 ServiceMonitor/community-rabbitmq',
      'monitoring.coreos.com/v1 PrometheusRule/community',
      'networking.k8s.io/v1 NetworkPolicy/reconciler',
    ].sort(),
  );
}, 60_000);
