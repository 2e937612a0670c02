// The per-app Kubernetes objects of the kustomize base (infra/k8s/base/apps/<app>.yaml), generated
// from one table so every app gets the same probes, limits, securityContext, PDB and
// NetworkPolicy, and every worker a KEDA ScaledObject on the queues SERVICE_ACCESS says it consumes.
// The overlays (dev, prod) patch replicas, resources and images; docs/DEPLOY.md.
import { COMMUNITY_VHOST, SERVICE_ACCESS } from '@community/contracts';
import { DEFAULT_PORTS, type ServiceName } from '@community/config';

export interface AppSpec {
  name: ServiceName;
  port: number;
  /** Consumes queues: gets a KEDA ScaledObject instead of a fixed replica count. */
  worker: boolean;
  /** Backing services it talks to (egress NetworkPolicy). */
  uses: Array<'rabbitmq' | 'postgres' | 'redis' | 'smtp' | 'webpush' | 'notification-service'>;
}

/** Drain deadline the apps get (SHUTDOWN_TIMEOUT_MS in the ConfigMap), and what Kubernetes allows around it. */
export const SHUTDOWN_TIMEOUT_MS = 25_000;
/** Endpoints controllers and ingress stop sending new requests within a few seconds of deletion. */
export const PRE_STOP_SLEEP_SECONDS = 5;
export const TERMINATION_GRACE_SECONDS = PRE_STOP_SLEEP_SECONDS + SHUTDOWN_TIMEOUT_MS / 1000 + 10;

export const APPS: readonly AppSpec[] = [
  {
    name: 'demo-community-api',
    port: DEFAULT_PORTS['demo-community-api'],
    worker: false,
    uses: ['rabbitmq', 'postgres'],
  },
  {
    name: 'notification-service',
    port: DEFAULT_PORTS['notification-service'],
    worker: true,
    uses: ['rabbitmq', 'postgres'],
  },
  {
    name: 'email-service',
    port: DEFAULT_PORTS['email-service'],
    worker: true,
    uses: ['rabbitmq', 'postgres', 'smtp', 'notification-service'],
  },
  { name: 'feed-service', port: DEFAULT_PORTS['feed-service'], worker: true, uses: ['rabbitmq', 'postgres', 'redis'] },
  // webpush: the browsers' push services, outside the cluster (docs/PUSH.md); notification-service:
  // the delay-then-check read-state lookup (docs/NOTIFICATIONS.md "Delivery timing").
  {
    name: 'push-service',
    port: DEFAULT_PORTS['push-service'],
    worker: true,
    uses: ['rabbitmq', 'postgres', 'webpush', 'notification-service'],
  },
  // Redis: the feed checks compare feed-service's cached timelines with Postgres (docs/RECONCILER.md).
  { name: 'reconciler', port: DEFAULT_PORTS.reconciler, worker: true, uses: ['rabbitmq', 'postgres', 'redis'] },
];

/** Labels of the backing services' pods, as the operators and the redis manifest set them (docs/DEPLOY.md). */
export const PEERS = {
  rabbitmq: { labels: { 'app.kubernetes.io/name': 'community-rabbitmq' }, ports: [5672, 15672] },
  postgres: { labels: { 'cnpg.io/cluster': 'community-pg' }, ports: [5432] },
  redis: { labels: { 'app.kubernetes.io/name': 'redis' }, ports: [6379] },
  'notification-service': {
    labels: { 'app.kubernetes.io/name': 'notification-service' },
    ports: [DEFAULT_PORTS['notification-service']],
  },
} as const;

/** Messages ready + unacked per replica before KEDA adds one (QueueLength over the management API). */
export const QUEUE_LENGTH_PER_REPLICA = 200;
/** Seconds of publish-to-consume lag (the age of the messages leaving the queue) before KEDA adds a replica. */
export const LAG_SECONDS_TARGET = 30;

const labels = (name: string) => ({
  'app.kubernetes.io/name': name,
  'app.kubernetes.io/part-of': 'community-notifications',
});

export function appManifests(app: AppSpec): object[] {
  const access = SERVICE_ACCESS.find((a) => a.user === app.name);
  if (app.worker && !access?.consumes.length)
    throw new Error(`${app.name} is a worker but SERVICE_ACCESS lists no queue it consumes`);
  const docs: object[] = [deployment(app), service(app), pdb(app), networkPolicy(app)];
  if (app.worker && access) docs.push(scaledObject(app, access.consumes));
  return docs;
}

function deployment(app: AppSpec): object {
  const probe = (path: string, periodSeconds: number, failureThreshold: number) => ({
    httpGet: { path, port: 'http' },
    periodSeconds,
    timeoutSeconds: 2,
    failureThreshold,
  });
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: app.name, labels: labels(app.name) },
    spec: {
      // Workers: KEDA owns the replica count (the ScaledObject's minReplicaCount); set for the first apply.
      replicas: 2,
      revisionHistoryLimit: 5,
      selector: { matchLabels: { 'app.kubernetes.io/name': app.name } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: {
          labels: labels(app.name),
          annotations: {
            'prometheus.io/scrape': 'true',
            'prometheus.io/port': String(app.port),
            'prometheus.io/path': '/metrics',
          },
        },
        spec: {
          serviceAccountName: 'community-app',
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 10001,
            runAsGroup: 10001,
            fsGroup: 10001,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'ScheduleAnyway',
              labelSelector: { matchLabels: { 'app.kubernetes.io/name': app.name } },
            },
          ],
          containers: [
            {
              name: app.name,
              image: `community-notifications/${app.name}`,
              imagePullPolicy: 'IfNotPresent',
              ports: [{ name: 'http', containerPort: app.port }],
              env: [{ name: 'PORT', value: String(app.port) }],
              // Non-secret settings from the shared ConfigMap, secrets (AMQP_URL with the app's own
              // broker user, DATABASE_URL, JWT_SECRET, ...) from the app's Secret: docs/DEPLOY.md.
              envFrom: [{ configMapRef: { name: 'community-config' } }, { secretRef: { name: `${app.name}-secrets` } }],
              resources: { requests: { cpu: '100m', memory: '160Mi' }, limits: { cpu: '1', memory: '384Mi' } },
              startupProbe: probe('/healthz', 2, 30),
              livenessProbe: probe('/healthz', 10, 3),
              readinessProbe: probe('/readyz', 5, 2),
              // The endpoints stop routing to the pod before the app starts draining (SIGTERM).
              lifecycle: { preStop: { sleep: { seconds: PRE_STOP_SLEEP_SECONDS } } },
              securityContext: {
                runAsNonRoot: true,
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
            },
          ],
          volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }],
        },
      },
    },
  };
}

function service(app: AppSpec): object {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: app.name, labels: labels(app.name) },
    spec: {
      selector: { 'app.kubernetes.io/name': app.name },
      ports: [{ name: 'http', port: app.port, targetPort: 'http' }],
    },
  };
}

function pdb(app: AppSpec): object {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: app.name, labels: labels(app.name) },
    spec: { maxUnavailable: 1, selector: { matchLabels: { 'app.kubernetes.io/name': app.name } } },
  };
}

function networkPolicy(app: AppSpec): object {
  const egress: object[] = [
    // DNS
    {
      to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
      ports: [
        { protocol: 'UDP', port: 53 },
        { protocol: 'TCP', port: 53 },
      ],
    },
    // OTLP traces to the collector, when configured (docs/DEPLOY.md)
    {
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } }],
      ports: [{ protocol: 'TCP', port: 4318 }],
    },
  ];
  for (const peer of app.uses) {
    if (peer === 'smtp') {
      // The mail provider is outside the cluster.
      egress.push({
        to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'] } }],
        ports: [25, 465, 587].map((port) => ({ protocol: 'TCP', port })),
      });
      continue;
    }
    if (peer === 'webpush') {
      // The browsers' push services (FCM, Mozilla's autopush, Apple's) are outside the cluster, on HTTPS.
      egress.push({
        to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'] } }],
        ports: [{ protocol: 'TCP', port: 443 }],
      });
      continue;
    }
    const p = PEERS[peer];
    egress.push({
      to: [{ podSelector: { matchLabels: p.labels } }],
      ports: p.ports.map((port) => ({ protocol: 'TCP', port })),
    });
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: app.name, labels: labels(app.name) },
    spec: {
      podSelector: { matchLabels: { 'app.kubernetes.io/name': app.name } },
      policyTypes: ['Ingress', 'Egress'],
      // HTTP from the namespace's pods (other apps, the ingress controller's proxies in it) and
      // Prometheus in the monitoring namespace; nothing else.
      ingress: [
        {
          from: [
            { podSelector: {} },
            { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
            { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } },
          ],
          ports: [{ protocol: 'TCP', port: app.port }],
        },
      ],
      egress,
    },
  };
}

function triggers(app: AppSpec, queues: readonly string[], namespace?: string): object[] {
  return [
    ...queues.map((queue) => ({
      type: 'rabbitmq',
      name: `depth-${queue.replace(/[^a-z0-9-]/g, '-')}`,
      authenticationRef: { name: 'rabbitmq-management' },
      metadata: {
        protocol: 'http',
        mode: 'QueueLength',
        value: String(QUEUE_LENGTH_PER_REPLICA),
        queueName: queue,
        vhostName: COMMUNITY_VHOST,
      },
    })),
    {
      type: 'prometheus',
      name: 'message-age',
      metadata: {
        serverAddress: 'http://prometheus-operated.monitoring.svc:9090',
        query: messageAgeQuery(app.name, queues, namespace),
        threshold: String(LAG_SECONDS_TARGET),
        // A query that returns nothing is an error (the ScaledObject's condition and
        // keda_scaler_errors say so), never a silent 0: see messageAgeQuery.
        ignoreNullValues: 'false',
      },
    },
  ];
}

/**
 * KEDA: one `rabbitmq` trigger per consumed work queue in QueueLength mode over the management API
 * (protocol http: the count is ready + unacked, so messages held by busy consumers count), and one
 * `prometheus` trigger on the age of the messages as they leave the queue. KEDA's rabbitmq trigger
 * has no "age of the oldest message" mode (its modes are QueueLength and MessageRate), and
 * rabbitmq_prometheus exposes no head-message age, so the age comes from the consumers' own
 * messaging_publish_to_consume_lag_seconds histogram (libs/messaging): in a FIFO queue the message
 * being consumed is the oldest one, so its lag is the head's age at that moment.
 */
function scaledObject(app: AppSpec, queues: readonly string[]): object {
  return {
    apiVersion: 'keda.sh/v1alpha1',
    kind: 'ScaledObject',
    metadata: { name: app.name, labels: labels(app.name) },
    spec: {
      scaleTargetRef: { name: app.name },
      minReplicaCount: 2,
      maxReplicaCount: 10,
      pollingInterval: 15,
      cooldownPeriod: 300,
      advanced: {
        horizontalPodAutoscalerConfig: {
          behavior: {
            scaleDown: { stabilizationWindowSeconds: 300, policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] },
          },
        },
      },
      triggers: triggers(app, queues),
    },
  };
}

/**
 * The age trigger's query: the p99 publish-to-consume lag of the worker's queues over 2 minutes,
 * from its consumers' histogram (> 0 whenever anything was consumed: a backlog being worked).
 * With nothing consumed in the window the histogram's rates are all 0 and histogram_quantile gives
 * NaN, which `>= 0` drops; the `or` arm then answers 0, but only from the app's own sample of its
 * queues (messaging_queue_messages with service="<app>", the policy guard's management API
 * reading), so the 0 says "this app is scraped and there is nothing to age". A query that finds neither (the apps not
 * scraped, a renamed metric, a wrong label) returns no sample, and with ignoreNullValues "false"
 * KEDA reports the trigger as failing instead of reading 0. The former query had no such arm and
 * ignoreNullValues "true": without the apps scraped (the Operator ignores prometheus.io
 * annotations) it read 0 forever and nothing said so. A backlog nobody consumes gives no lag at
 * all: the depth triggers (ready + unacked) and CommunityQueueMessageTooOld cover that case.
 * infra/grafana/test/scrape.test.ts runs each ScaledObject's query against a real Prometheus.
 */
export function messageAgeQuery(service: string, queues: readonly string[], namespace?: string): string {
  const re = queues.map((q) => q.replace(/\./g, '\\\\.')).join('|');
  const ns = namespace === undefined ? '' : `namespace="${namespace}",`;
  return (
    `max(histogram_quantile(0.99, sum by (queue, le) (rate(messaging_publish_to_consume_lag_seconds_bucket{${ns}queue=~"${re}"}[2m]))) >= 0)` +
    ` or max(messaging_queue_messages{${ns}service="${service}",queue=~"${re}"}) * 0`
  );
}

/**
 * An overlay's patch (infra/k8s/overlays/<overlay>/keda-age-queries.yaml): the same triggers with
 * the age query limited to the overlay's namespace, the label the Prometheus Operator puts on every
 * series it scrapes, so two deployments of the stack scraped by one Prometheus do not read each
 * other's lag. (The base has no namespace; the scrape test runs the base's query, without one.)
 * A ScaledObject's triggers are a list a strategic merge replaces whole, hence all of them.
 */
export function ageQueryPatches(namespace: string): object[] {
  return APPS.filter((a) => a.worker).map((app) => ({
    apiVersion: 'keda.sh/v1alpha1',
    kind: 'ScaledObject',
    metadata: { name: app.name },
    spec: { triggers: triggers(app, consumedQueues(app), namespace) },
  }));
}

function consumedQueues(app: AppSpec): readonly string[] {
  const access = SERVICE_ACCESS.find((a) => a.user === app.name);
  if (!access?.consumes.length)
    throw new Error(`${app.name} is a worker but SERVICE_ACCESS lists no queue it consumes`);
  return access.consumes;
}

/**
 * The data stores' NetworkPolicies (infra/k8s/platform/network-policies.yaml): who may connect to
 * Redis, RabbitMQ and Postgres. Ingress only for the broker and the database: their operators
 * manage their egress (peer discovery through the Kubernetes API, backups to object storage),
 * which a pod selector cannot express. Redis needs no egress at all, so it gets none.
 */
export function dataStorePolicies(): object[] {
  const users = (peer: keyof typeof PEERS) => APPS.filter((a) => a.uses.includes(peer)).map((a) => a.name);
  const pods = (names: string[]) => ({
    podSelector: { matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'In', values: names }] },
  });
  const ns = (name: string) => ({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': name } } });
  const tcp = (...ports: number[]) => ports.map((port) => ({ protocol: 'TCP', port }));
  const policy = (name: string, selector: Record<string, string>, ingress: object[], egressToo = false) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name,
      labels: { 'app.kubernetes.io/part-of': 'community-notifications', 'app.kubernetes.io/component': 'data-store' },
    },
    spec: {
      podSelector: { matchLabels: { ...selector } },
      policyTypes: egressToo ? ['Ingress', 'Egress'] : ['Ingress'],
      ingress,
      ...(egressToo ? { egress: [] } : {}),
    },
  });
  return [
    policy('redis', PEERS.redis.labels, [{ from: [pods(users('redis'))], ports: tcp(...PEERS.redis.ports) }], true),
    policy('community-rabbitmq', PEERS.rabbitmq.labels, [
      // AMQP and the management API (the apps' policy guard, the reconciler's watchdog).
      { from: [pods(users('rabbitmq'))], ports: tcp(...PEERS.rabbitmq.ports) },
      { from: [pods(['rabbitmq-topology'])], ports: tcp(15672) },
      // KEDA's rabbitmq triggers (QueueLength over the management API), the Messaging Topology Operator.
      { from: [ns('keda'), ns('rabbitmq-system')], ports: tcp(15672) },
      // Prometheus: rabbitmq_prometheus.
      { from: [ns('monitoring')], ports: tcp(15692) },
      // The other nodes: clustering (epmd 4369, distribution 25672, CLI tools 35672-35682), quorum
      // queue replication, and everything a node asks a peer.
      { from: [{ podSelector: { matchLabels: { ...PEERS.rabbitmq.labels } } }] },
    ]),
    policy('community-pg', PEERS.postgres.labels, [
      { from: [pods([...users('postgres'), 'db-migrate'])], ports: tcp(5432) },
      // CloudNativePG: the operator reaches each instance manager (8000) and Postgres; Prometheus the exporter (9187).
      { from: [ns('cnpg-system')], ports: tcp(8000, 5432) },
      { from: [ns('monitoring')], ports: tcp(9187) },
      // The other instances: streaming replication, the instance managers.
      { from: [{ podSelector: { matchLabels: { ...PEERS.postgres.labels } } }], ports: tcp(5432, 8000) },
    ]),
  ];
}
