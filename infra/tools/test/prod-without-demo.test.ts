// demo-community-api is a demo (x-user-id outside production, a traffic generator): the production
// overlay must not deploy it, nor leave anything that routes to it, admits traffic to it or
// configures it. Rendered with kubectl's kustomize, as a deploy does (see kustomize.test.ts).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../../..');
const DEMO = 'demo-community-api';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = Record<string, any>;

async function render(dir: string): Promise<Doc[]> {
  const { stdout } = await run('kubectl', ['kustomize', path.join(ROOT, dir)], { maxBuffer: 64 * 1024 * 1024 });
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Doc)
    .filter(Boolean);
}

const id = (d: Doc) => `${d.kind}/${d.metadata?.name}`;

/**
 * Every rendered object that names the demo, with where. The one thing allowed is the producer's
 * broker user in the topology Job (its password Secret's volume and mount) and in the Job's
 * ConfigMap (users.tsv, the permissions in definitions.json): that user is the producer identity
 * (libs/contracts access.ts) the real community API connects as (docs/CONTRACT.md).
 */
export function demoLeftovers(docs: Doc[]): string[] {
  const found: string[] = [];
  for (const d of docs) {
    if (!JSON.stringify(d).includes(DEMO)) continue;
    if (d.kind === 'Job' && d.metadata.name === 'rabbitmq-topology') {
      const pod = structuredClone(d.spec.template.spec);
      pod.volumes = pod.volumes.filter((v: Doc) => v.secret?.secretName !== `rabbitmq-user-${DEMO}`);
      pod.containers[0].volumeMounts = pod.containers[0].volumeMounts.filter(
        (m: Doc) => m.mountPath !== `/users/${DEMO}`,
      );
      if (JSON.stringify(pod).includes(DEMO)) found.push(`${id(d)}: names ${DEMO} beyond its broker user's password`);
      continue;
    }
    if (d.kind === 'ConfigMap' && d.metadata.name.startsWith('rabbitmq-topology')) {
      for (const [key, value] of Object.entries(d.data as Record<string, string>)) {
        if (!value.includes(DEMO)) continue;
        if (key === 'users.tsv' || key === 'definitions.json') {
          const defs = key === 'definitions.json' ? (JSON.parse(value) as Doc) : undefined;
          // definitions.json may only grant the producer user its permissions, nothing else by that name.
          const rest = defs ? { ...defs, permissions: [], topic_permissions: [] } : undefined;
          if (!rest || !JSON.stringify(rest).includes(DEMO)) continue;
        }
        found.push(`${id(d)}: key ${key} refers to ${DEMO}`);
      }
      continue;
    }
    if (d.kind === 'ConfigMap') {
      for (const [key, value] of Object.entries((d.data ?? {}) as Record<string, string>)) {
        if (key.includes(DEMO) || value.includes(DEMO)) found.push(`${id(d)}: key ${key} refers to ${DEMO}`);
      }
      continue;
    }
    if (d.kind === 'Ingress') {
      for (const rule of d.spec?.rules ?? []) {
        for (const p of rule.http?.paths ?? [])
          if (p.backend?.service?.name === DEMO)
            found.push(`${id(d)}: a rule routes ${rule.host ?? '*'}${p.path ?? ''} to ${DEMO}`);
      }
      if (!found.some((f) => f.startsWith(id(d)))) found.push(`${id(d)}: refers to ${DEMO}`);
      continue;
    }
    found.push(d.metadata?.name === DEMO ? `${id(d)}: deployed` : `${id(d)}: refers to ${DEMO}`);
  }
  return found;
}

describe('the production overlay', () => {
  let prod: Doc[];
  let dev: Doc[];
  beforeAll(async () => {
    [prod, dev] = await Promise.all([render('infra/k8s/overlays/prod'), render('infra/k8s/overlays/dev')]);
  });

  it('deploys no demo-community-api: no Deployment, Service, PDB, NetworkPolicy, ServiceMonitor, alert rule, Ingress rule or config naming it', () => {
    expect(demoLeftovers(prod)).toEqual([]);
    expect(prod.filter((d) => d.metadata?.name === DEMO).map(id)).toEqual([]);
  });

  it('admits ingress-nginx only to the services that are deployed', () => {
    const deployed = new Set(
      prod.filter((d) => d.kind === 'Deployment').map((d) => d.spec.template.metadata.labels['app.kubernetes.io/name']),
    );
    for (const n of prod.filter((d) => d.kind === 'NetworkPolicy')) {
      const fromIngress = JSON.stringify(n.spec.ingress ?? []).includes('ingress-nginx');
      const target = n.spec.podSelector?.matchLabels?.['app.kubernetes.io/name'];
      if (fromIngress) expect([n.metadata.name, deployed.has(target)]).toEqual([n.metadata.name, true]);
    }
  });

  it('the check sees the demo where the development overlay still deploys it', () => {
    expect(demoLeftovers(dev).sort()).toEqual([
      `Deployment/${DEMO}: deployed`,
      `NetworkPolicy/${DEMO}: deployed`,
      `PodDisruptionBudget/${DEMO}: deployed`,
      'PrometheusRule/community: refers to demo-community-api',
      `Service/${DEMO}: deployed`,
      `ServiceMonitor/${DEMO}: deployed`,
    ]);
    const withIngress = structuredClone(prod);
    withIngress.push({
      kind: 'Ingress',
      metadata: { name: 'community' },
      spec: {
        rules: [{ host: 'api.example.com', http: { paths: [{ path: '/', backend: { service: { name: DEMO } } }] } }],
      },
    });
    withIngress.find(
      (d) => d.kind === 'ConfigMap' && d.metadata.name.startsWith('community-config'),
    )!.data.COMMUNITY_API_URL = `http://${DEMO}:3000`;
    expect(demoLeftovers(withIngress)).toEqual([
      expect.stringMatching(/^ConfigMap\/community-config.*: key COMMUNITY_API_URL refers to demo-community-api$/),
      `Ingress/community: a rule routes api.example.com/ to ${DEMO}`,
    ]);
  });
});
