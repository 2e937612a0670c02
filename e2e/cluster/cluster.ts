import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../harness';
import { startPrivateRabbit, type PrivateRabbit } from '../chaos/private-deps';

/**
 * A 3-node RabbitMQ cluster of the cluster fault suite's own (docs/TESTING.md "Cluster fault suite"),
 * on this machine, next to the shared node: each node is a private node of the chaos suite
 * (e2e/chaos/private-deps.ts: its own name, AMQP/management/dist ports, data and log directories,
 * pid file, config and plugins file; the package's Erlang cookie under HOME=/var/lib/rabbitmq), then
 * nodes 2 and 3 `stop_app`, `join_cluster` node 1, `start_app`, as an operator (or the Cluster
 * Operator's peer discovery) forms a cluster.
 *
 * In front of it, haproxy (Debian's package), configured as a Kubernetes Service fronts a
 * RabbitMQ cluster: TCP, round robin, a TCP health check every second (a node down, or drained:
 * its listeners suspended, leaves the pool after 2 failed checks and comes back after 2 good ones),
 * timeouts longer than any AMQP heartbeat so haproxy never closes an idle connection itself.
 *
 * Node names are `cluster-<pid>-<n>@localhost` and the directories `cluster-<pid>-…`: the pid is
 * the owner's, which the leftovers sweep of `npm test` (scripts/dev/setup/leftovers.mjs) reads to
 * stop nodes and haproxy processes a killed run left behind.
 */
export interface Cluster {
  nodes: PrivateRabbit[];
  /** The cluster through haproxy: `amqp://guest:guest@127.0.0.1:<port>`. */
  haproxyAmqpUrl: string;
  haproxyAmqpPort: number;
  /** The management API through haproxy (any node answers for the whole cluster). */
  haproxyManagementUrl: string;
  /** Every node's AMQP URL, comma-separated: AMQP_URL without a load balancer (libs/messaging/src/urls.ts). */
  urlList: string;
  /** The node of that name. */
  byName(node: string): PrivateRabbit;
  /** `rabbitmqctl` on the first node that answers (any node speaks for the cluster; one may be down). */
  ctl(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

export const CLUSTER_SIZE = 3;

/** Every rabbitmq.conf line the cluster's nodes add to a private node's. */
export const CLUSTER_CONF = [
  // Quorum queue leaders spread over the nodes at declaration, whichever node the declaring client
  // (or the definitions import) is connected to (docs/MESSAGING.md "Leader placement"). The
  // topology's policies say the same per queue; this is the default for anything else.
  'queue_leader_locator = balanced',
  // A node that cannot see a majority of the cluster pauses (stops its broker application, so its
  // clients go to the majority) and resumes once it sees them again: the Cluster Operator's default,
  // and what a 3-node cluster should run (with `ignore`, the default, a healed split needs an
  // operator to restart the minority's nodes). e2e/cluster/partition.ts.
  'cluster_partition_handling = pause_minority',
];

export async function startCluster(): Promise<Cluster> {
  const started: PrivateRabbit[] = [];
  let haproxy: ChildProcess | undefined;
  let dir: string | undefined;
  const stop = async () => {
    if (haproxy && haproxy.exitCode === null && haproxy.signalCode === null) {
      const gone = new Promise((r) => haproxy?.once('exit', r));
      haproxy.kill('SIGKILL');
      await gone;
    }
    await Promise.all(started.filter(Boolean).map((n) => n.stop()));
    if (dir) await rm(dir, { recursive: true, force: true });
  };
  try {
    // All three at once (each registered for the cleanup as soon as it is up): booting is mostly
    // waiting, and together they are up in about the time of one and a half.
    const booting = Array.from({ length: CLUSTER_SIZE }, (_, i) =>
      startPrivateRabbit({
        node: `cluster-${process.pid}-${i + 1}@localhost`,
        dirPrefix: `cluster-${process.pid}-rabbit${i + 1}-`,
        conf: CLUSTER_CONF,
      }).then((n) => {
        started[i] = n;
        return n;
      }),
    );
    const settled = await Promise.allSettled(booting);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const [seed, ...others] = started;
    for (const n of others) {
      await n.ctl('stop_app');
      await n.ctl('join_cluster', seed.node);
      await n.ctl('start_app');
    }
    const members = await seed.ctl('cluster_status', '--formatter', 'json');
    const running = (JSON.parse(members) as { running_nodes: string[] }).running_nodes;
    if (running.length !== CLUSTER_SIZE)
      throw new Error(`cluster formed with ${running.length} running nodes: ${running.join(', ')}`);

    dir = await mkdtemp(path.join(tmpdir(), `cluster-${process.pid}-haproxy-`));
    const [amqpPort, mgmtPort] = [await freePort(), await freePort()];
    const cfg = path.join(dir, 'haproxy.cfg');
    const backend = (name: string, port: (n: PrivateRabbit) => number) => [
      `backend ${name}`,
      '  mode tcp',
      '  balance roundrobin',
      '  option tcp-check',
      ...started.map((n, i) => `  server rabbit${i + 1} 127.0.0.1:${port(n)} check inter 1s fall 2 rise 2`),
    ];
    await writeFile(
      cfg,
      [
        'global',
        '  maxconn 4096',
        'defaults',
        '  mode tcp',
        '  timeout connect 5s',
        // Longer than any heartbeat (60 s by default): an idle AMQP connection is the broker's and the client's to close.
        '  timeout client 3h',
        '  timeout server 3h',
        // A server that left the pool takes its connections with it, as a Service endpoint removed does.
        '  option redispatch',
        `frontend amqp`,
        `  bind 127.0.0.1:${amqpPort}`,
        '  default_backend rabbit_amqp',
        `frontend management`,
        `  bind 127.0.0.1:${mgmtPort}`,
        '  default_backend rabbit_management',
        ...backend('rabbit_amqp', (n) => n.amqpPort),
        ...backend('rabbit_management', (n) => n.managementPort),
        '',
      ].join('\n'),
    );
    // In the foreground (-db), a child of this process: it ends with the suite's cleanup, and the
    // leftovers sweep finds it by its config path if the suite was killed.
    haproxy = spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
    const errors: string[] = [];
    haproxy.stderr?.on('data', (c: Buffer) => errors.push(c.toString()));
    const proc = haproxy;
    await new Promise<void>((resolve, reject) => {
      proc.once('error', reject);
      proc.once('exit', (code) => reject(new Error(`haproxy exited ${code}: ${errors.join('')}`)));
      // Up once it forwards to a node: the management API's overview through it.
      void (async () => {
        for (let i = 0; i < 100; i++) {
          const res = await fetch(`http://127.0.0.1:${mgmtPort}/api/overview`, {
            headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
          }).catch(() => undefined);
          if (res?.ok) return resolve();
          await sleep(100);
        }
        reject(new Error(`haproxy did not forward within 10 s: ${errors.join('')}`));
      })();
    });
    const byName = (node: string) => {
      const n = started.find((x) => x.node === node);
      if (!n) throw new Error(`no node ${node} in the cluster (${started.map((x) => x.node).join(', ')})`);
      return n;
    };
    return {
      nodes: started,
      haproxyAmqpUrl: `amqp://guest:guest@127.0.0.1:${amqpPort}`,
      haproxyAmqpPort: amqpPort,
      haproxyManagementUrl: `http://127.0.0.1:${mgmtPort}`,
      urlList: started.map((n) => n.amqpUrl).join(','),
      byName,
      async ctl(...args) {
        let last: unknown;
        for (const n of started) {
          try {
            return await n.ctl(...args);
          } catch (err) {
            last = err;
          }
        }
        throw last;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
