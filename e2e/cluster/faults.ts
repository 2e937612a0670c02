import { setTimeout as sleep } from 'node:timers/promises';
import { EVENTS_EXCHANGE } from '@community/contracts';
import { eventually } from '@community/testing';
import type { App } from '../harness';
import type { Management } from '../chaos/checks';
import type { PrivateRabbit } from '../chaos/private-deps';
import type { Cluster } from './cluster';
import { minorityPartition } from './partition';

/**
 * The cluster fault suite's faults (docs/RELIABILITY.md "Cluster faults"), run by e2e/chaos/run.ts
 * (CHAOS_SUITE=cluster) under the chaos suite's load and ledger, one at a time, each returning
 * once healed with a note for the report (recovery times). What a fault finds wrong beyond the
 * ledger's invariants goes into `breaches`.
 */
export interface ClusterFaultContext {
  /** The running app of that key (notifications, email, api, reconciler, feed). */
  app(key: string): App;
  breaches: string[];
  holdMs: number;
  kills: number;
  recoverMs: number;
}

/** What each fault acts on: the cluster, and the management API the suite reads it through. */
export interface ClusterTarget {
  cluster: Cluster;
  management: Management;
}

/** The queue the issue names: its leader is the one killed, and the one deleted under its consumer. */
export const CRITICAL = 'notification-service.critical';

const auth = { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` };

async function mgmt<T>(m: Management, method: string, path: string): Promise<{ status: number; body: T | undefined }> {
  const res = await fetch(`${m.url}/api${path}`, { method, headers: auth, signal: AbortSignal.timeout(10_000) });
  const body = res.status === 204 ? undefined : ((await res.json().catch(() => undefined)) as T | undefined);
  return { status: res.status, body };
}

interface QueueInfo {
  leader?: string;
  node?: string;
  members?: string[];
  online?: string[];
  consumers?: number;
  messages?: number;
}

export async function queueInfo(m: Management, queue: string): Promise<QueueInfo | undefined> {
  const { status, body } = await mgmt<QueueInfo>(
    m,
    'GET',
    `/queues/${encodeURIComponent(m.vhost)}/${encodeURIComponent(queue)}`,
  );
  return status === 200 ? body : undefined;
}

/** The node leading `queue`, once the broker names one (none while a leader is being elected). */
async function leaderOf(m: Management, queue: string): Promise<string | undefined> {
  const q = await queueInfo(m, queue).catch(() => undefined);
  return q?.leader ?? q?.node;
}

/**
 * Every quorum queue of the vhost with each node's share of leaders: `{ node: count }`. Read from
 * the management API, which lists `leader` (`node` on older versions) for each quorum queue.
 */
export async function leadersByNode(m: Management): Promise<Record<string, number>> {
  const { body } = await mgmt<Array<{ type?: string; leader?: string; node?: string }>>(
    m,
    'GET',
    `/queues/${encodeURIComponent(m.vhost)}?columns=name,type,leader,node`,
  );
  const out: Record<string, number> = {};
  for (const q of body ?? [])
    if (q.type === 'quorum') out[q.leader ?? q.node ?? '?'] = (out[q.leader ?? q.node ?? '?'] ?? 0) + 1;
  return out;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Back in the cluster: the node runs the app, and every quorum queue has all its members online
 * again (the management API lists each quorum queue's `members` and `online` nodes), so the next
 * fault may take any node.
 */
async function rejoined(m: Management, node: PrivateRabbit, recoverMs: number): Promise<void> {
  await node.ctl('await_startup', '--timeout', String(Math.ceil(recoverMs / 1000)));
  await allOnline(m, recoverMs);
}

async function allOnline(m: Management, recoverMs: number): Promise<void> {
  await eventually(
    'every quorum queue with all its members online',
    async () => {
      const { body } = await mgmt<Array<{ type?: string; members?: string[]; online?: string[] }>>(
        m,
        'GET',
        `/queues/${encodeURIComponent(m.vhost)}?columns=name,type,members,online`,
      );
      const quorum = (body ?? []).filter((q) => q.type === 'quorum');
      return (
        quorum.length > 0 && quorum.every((q) => (q.members?.length ?? 0) > 0 && q.online?.length === q.members?.length)
      );
    },
    recoverMs,
    250,
  );
}

export function clusterFaults(ctx: ClusterFaultContext): Record<string, (target: ClusterTarget) => Promise<string>> {
  const f: Record<string, (target: ClusterTarget) => Promise<string>> = {};

  // The node leading the critical queue dies (SIGKILL of its VM: no goodbye to its peers or its
  // clients), stays down for a while under load, and is started again; ctx.kills times, each time
  // on whichever node leads then. Recovery: a new leader elected on a survivor, then the node back.
  f[`SIGKILL the leader of ${CRITICAL} ×${ctx.kills} and restart`] = async ({ cluster, management: m }) => {
    const notes: string[] = [];
    for (let k = 0; k < ctx.kills; k++) {
      await sleep(Math.random() * (ctx.holdMs / ctx.kills / 2));
      const leader = await eventually(`a leader of ${CRITICAL}`, () => leaderOf(m, CRITICAL), ctx.recoverMs, 200);
      const node = cluster.byName(leader);
      const killedAt = Date.now();
      await node.kill();
      const next = await eventually(
        `a new leader of ${CRITICAL} after ${leader} died`,
        async () => {
          const l = await leaderOf(m, CRITICAL);
          return l && l !== leader ? l : false;
        },
        ctx.recoverMs,
        100,
      ).catch(() => undefined);
      const electedMs = Date.now() - killedAt;
      if (!next) ctx.breaches.push(`no new leader of ${CRITICAL} within ${secs(ctx.recoverMs)} of killing ${leader}`);
      await sleep(Math.max(0, killedAt + ctx.holdMs / ctx.kills - Date.now()));
      const restartAt = Date.now();
      await node.start();
      await rejoined(m, node, ctx.recoverMs);
      notes.push(
        `${short(leader)} killed: leader ${next ? short(next) : 'none'} after ${secs(electedMs)}; restarted and every queue fully online ${secs(Date.now() - restartAt)} after the restart`,
      );
    }
    return notes.join('; ');
  };

  // A rolling restart, one node at a time, the way an upgrade does it: wait until no quorum queue
  // needs this node for its majority, drain it (maintenance mode: its leaders move away, its client
  // listeners close, the clients reconnect through the others), stop it, start it, revive it.
  f['rolling restart of all 3 nodes: drain → stop → start → revive'] = async ({ cluster, management: m }) => {
    const notes: string[] = [];
    for (const node of cluster.nodes) {
      const t = Date.now();
      await node.cli(
        'rabbitmq-upgrade',
        'await_online_quorum_plus_one',
        '--timeout',
        String(Math.ceil(ctx.recoverMs / 1000)),
      );
      await node.cli('rabbitmq-upgrade', 'drain');
      const drained = Date.now();
      await node.shutdown();
      await node.start();
      await node.cli('rabbitmq-upgrade', 'revive');
      await rejoined(m, node, ctx.recoverMs);
      notes.push(`${short(node.node)} ${secs(Date.now() - t)} (drain ${secs(drained - t)})`);
    }
    return notes.join(', ');
  };

  // The critical queue deleted under its live consumer and declared again, as an operator moving
  // or re-creating a queue does. Deleting a queue deletes what it holds (that is a purge: item 7's
  // re-drive is its remedy), so first its inflow stops: its bindings from the events exchange are
  // removed (the producers' mandatory publishes come back unroutable and their outbox retries them),
  // and once it is empty (ready and unacknowledged) it is deleted. Its consumer is cancelled by the
  // broker; notification-service must declare it again (with its bindings, which resumes the
  // inflow) and resubscribe, and say not ready until it has.
  f[`delete and re-declare ${CRITICAL} under its consumer`] = async ({ cluster, management: m }) => {
    const vhost = encodeURIComponent(m.vhost);
    const q = encodeURIComponent(CRITICAL);
    const { body: bindings } = await mgmt<Array<{ source: string; properties_key: string }>>(
      m,
      'GET',
      `/queues/${vhost}/${q}/bindings`,
    );
    for (const b of (bindings ?? []).filter((x) => x.source === EVENTS_EXCHANGE)) {
      const del = await mgmt(
        m,
        'DELETE',
        `/bindings/${vhost}/e/${encodeURIComponent(b.source)}/q/${q}/${encodeURIComponent(b.properties_key)}`,
      );
      if (del.status >= 300) throw new Error(`unbinding ${CRITICAL}: ${del.status}`);
    }
    const unbound = Date.now();
    // Exact depth (ready + unacknowledged) from the broker itself, not the management API's cached figure.
    await eventually(
      `${CRITICAL} empty`,
      async () => {
        const out = await cluster.ctl('list_queues', '-q', '--no-table-headers', 'name', 'messages');
        return out.split('\n').some((l) => l.trim().split(/\s+/)[0] === CRITICAL && l.trim().split(/\s+/)[1] === '0');
      },
      ctx.recoverMs,
      100,
    );
    const before = await queueInfo(m, CRITICAL);
    if (!before?.consumers) ctx.breaches.push(`${CRITICAL} had no consumer before the delete`);
    const notifications = ctx.app('notifications');
    const del = await mgmt(m, 'DELETE', `/queues/${vhost}/${q}`);
    if (del.status >= 300) throw new Error(`deleting ${CRITICAL}: ${del.status}`);
    const deletedAt = Date.now();
    // Readiness polled as fast as it answers while the consumer comes back: how long it said not ready.
    let notReadyMs = 0;
    let lastStatus = 0;
    let polling = true;
    const poller = (async () => {
      let last = Date.now();
      while (polling) {
        lastStatus = (await fetch(`${notifications.url}/readyz`).catch(() => undefined))?.status ?? 0;
        const now = Date.now();
        if (lastStatus !== 200) notReadyMs += now - last;
        last = now;
        await sleep(10);
      }
    })();
    // Declared again: its bindings from the events exchange are back (read from the broker's
    // metadata store). Then its consumer, in the new queue's statistics (before the re-declare the
    // management API may still show the deleted queue's consumer for up to a second; not after).
    const wanted = (bindings ?? []).filter((x) => x.source === EVENTS_EXCHANGE).length;
    const rebound = await eventually(
      `${CRITICAL} declared again with its bindings`,
      async () => {
        const res = await mgmt<Array<{ source: string }>>(m, 'GET', `/queues/${vhost}/${q}/bindings`).catch(
          () => undefined,
        );
        return res?.status === 200 && (res.body ?? []).filter((x) => x.source === EVENTS_EXCHANGE).length === wanted
          ? Date.now()
          : false;
      },
      ctx.recoverMs,
      50,
    ).catch(() => undefined);
    const consuming = await eventually(
      `${CRITICAL} consumed again`,
      async () => {
        const info = await queueInfo(m, CRITICAL).catch(() => undefined);
        return (info?.consumers ?? 0) > 0 ? Date.now() : false;
      },
      ctx.recoverMs,
      100,
    ).catch(() => undefined);
    polling = false;
    await poller;
    if (!rebound || !consuming) {
      ctx.breaches.push(
        `${CRITICAL} not ${rebound ? 'consumed' : 'declared'} again within ${secs(ctx.recoverMs)} of its delete (notification-service /readyz ${lastStatus})`,
      );
      return 'not re-declared';
    }
    const info = await queueInfo(m, CRITICAL).catch(() => undefined);
    return `emptied ${secs(deletedAt - unbound)} after unbinding; declared again (${wanted} bindings) ${secs(rebound - deletedAt)} after the delete, its consumer seen ${secs(consuming - deletedAt)} after it (leader ${short(info?.leader ?? '?')}); /readyz not ready for ${notReadyMs} ms (polled every 10 ms; libs/messaging/test/cancel.test.ts asserts it exactly)`;
  };
  // How a split is made on one machine, and how it differs from a real one: partition.ts.
  f['minority partition: node 3 cut off from nodes 1 and 2 and healed'] = async ({ cluster, management: m }) => {
    const { note, problems } = await minorityPartition(cluster, ctx.holdMs, ctx.recoverMs);
    ctx.breaches.push(...problems);
    const t = Date.now();
    await allOnline(m, ctx.recoverMs).catch(() =>
      ctx.breaches.push(`quorum queues not all online again within ${secs(ctx.recoverMs)} of the heal`),
    );
    return `${note}; every quorum queue fully online ${secs(Date.now() - t)} after that`;
  };
  return f;
}

/** `cluster-123-2@localhost` → `node 2`. */
function short(node: string): string {
  const m = /-(\d+)@/.exec(node);
  return m ? `node ${m[1]}` : node;
}
