// Messaging Topology Operator custom resources (rabbitmq.com/v1beta1) from the same data as
// definitions.json: for clusters where the operator, not the definitions Job, owns the topology
// (docs/DEPLOY.md "Topology: Job or operator"). Queue arguments are immutable after creation (the
// operator refuses to update them), which is why every tunable is a Policy.
import { createHash } from 'node:crypto';
import type { Definitions } from './definitions';

/** The RabbitmqCluster these objects belong to (infra/k8s/platform/rabbitmq.yaml). */
export const RABBITMQ_CLUSTER = 'community-rabbitmq';

/** A DNS-1123 object name for a broker name (queue names may hold ':' '*' '#'); a hash keeps it unique. */
export function objectName(kind: string, ...parts: string[]): string {
  const raw = parts.join('.');
  const clean = `${kind}-${raw}`
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 6);
  return `${clean.slice(0, 240)}-${hash}`;
}

const ref = { rabbitmqClusterReference: { name: RABBITMQ_CLUSTER } };

export function operatorResources(defs: Definitions, userSecret: (user: string) => string): object[] {
  const vhost = defs.vhosts[0].name;
  const meta = (name: string) => ({
    name,
    labels: {
      'app.kubernetes.io/part-of': 'community-notifications',
      'app.kubernetes.io/component': 'rabbitmq-topology',
    },
  });
  const out: object[] = [
    {
      apiVersion: 'rabbitmq.com/v1beta1',
      kind: 'Vhost',
      metadata: meta(objectName('vhost', vhost)),
      spec: { name: vhost, ...ref },
    },
  ];
  for (const x of defs.exchanges) {
    out.push({
      apiVersion: 'rabbitmq.com/v1beta1',
      kind: 'Exchange',
      metadata: meta(objectName('exchange', x.name)),
      spec: { name: x.name, vhost, type: x.type, durable: true, autoDelete: false, ...ref },
    });
  }
  for (const q of defs.queues) {
    out.push({
      apiVersion: 'rabbitmq.com/v1beta1',
      kind: 'Queue',
      metadata: meta(objectName('queue', q.name)),
      spec: {
        name: q.name,
        vhost,
        type: 'quorum',
        durable: true,
        autoDelete: false,
        arguments: withoutType(q.arguments),
        ...ref,
      },
    });
  }
  for (const b of defs.bindings) {
    out.push({
      apiVersion: 'rabbitmq.com/v1beta1',
      kind: 'Binding',
      metadata: meta(objectName('binding', b.source, b.destination, b.routing_key)),
      spec: {
        vhost,
        source: b.source,
        destination: b.destination,
        destinationType: b.destination_type,
        routingKey: b.routing_key,
        ...(Object.keys(b.arguments).length > 0 ? { arguments: b.arguments } : {}),
        ...ref,
      },
    });
  }
  for (const p of defs.policies) {
    out.push({
      apiVersion: 'rabbitmq.com/v1beta1',
      kind: 'Policy',
      metadata: meta(objectName('policy', p.name)),
      spec: {
        name: p.name,
        vhost,
        pattern: p.pattern,
        applyTo: p['apply-to'],
        priority: p.priority,
        definition: p.definition,
        ...ref,
      },
    });
  }
  for (const u of defs.users) {
    // The password comes from the Secret (keys username, password), created by the deployer: docs/DEPLOY.md.
    out.push({
      apiVersion: 'rabbitmq.com/v1beta1',
      kind: 'User',
      metadata: meta(objectName('user', u.name)),
      spec: { tags: u.tags, importCredentialsSecret: { name: userSecret(u.name) }, ...ref },
    });
  }
  for (const p of defs.permissions) {
    out.push({
      apiVersion: 'rabbitmq.com/v1beta1',
      kind: 'Permission',
      metadata: meta(objectName('permission', p.user, vhost)),
      spec: {
        vhost,
        userReference: { name: objectName('user', p.user) },
        permissions: { configure: p.configure, write: p.write, read: p.read },
        ...ref,
      },
    });
  }
  for (const t of defs.topic_permissions) {
    out.push({
      apiVersion: 'rabbitmq.com/v1beta1',
      kind: 'TopicPermission',
      metadata: meta(objectName('topicpermission', t.user, vhost, t.exchange)),
      spec: {
        vhost,
        userReference: { name: objectName('user', t.user) },
        permissions: { exchange: t.exchange, write: t.write, read: t.read },
        ...ref,
      },
    });
  }
  return out;
}

/** The operator's Queue has `type` as a field; the rest of the arguments go in `arguments`. */
function withoutType(args: Record<string, unknown>): Record<string, unknown> {
  const { 'x-queue-type': _type, ...rest } = args;
  return rest;
}
