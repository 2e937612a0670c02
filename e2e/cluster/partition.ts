import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '@community/testing';
import type { Cluster } from './cluster';

/**
 * A minority partition on one machine: the last node of the cluster cut off from the other two at
 * the Erlang distribution layer, where RabbitMQ's nodes talk to each other (Mnesia, Ra, the node
 * monitor), while its clients still reach it, as on one side of a network split.
 *
 * How, honestly: on the cut node, `net_kernel:allow([node()])` makes its distribution refuse every
 * handshake, in and out, with any other node, and `erlang:disconnect_node/1` drops the links it has
 * to its peers. Both sides see `nodedown` at once, and every reconnection attempt (the peers', its
 * own) is refused until a process started by the same `eval` empties the allow list again after the
 * hold: the peers connect again. net_kernel's API can only extend that list, and a list of the peers
 * would keep refusing the CLI tools' nodes (every `rabbitmqctl list_queues` of the cluster then times
 * out: node 3's answers go straight to the tool's node), so the healer resets it in net_kernel's state
 * (`sys:replace_state`, the one field that is a list headed by the node's own name), which is what a
 * node that never called allow/1 has. What differs from a real split: the links fail at once, as
 * with a firewall that rejects (a split that drops packets is noticed only after net_ticktime, 60 s
 * by default); and the CLI tools cannot reach the cut node during the hold either.
 * No iptables/nftables here (the container has no netfilter), and the dist port of each node cannot
 * be moved behind a proxy without per-node host names (epmd answers the port, the host is each node's).
 *
 * With `cluster_partition_handling = pause_minority` (e2e/cluster/cluster.ts, the Cluster Operator's
 * default) the cut node, a minority of one, pauses: it stops its broker application (its clients
 * are disconnected and reconnect, through haproxy or the next URL of the list, to the majority),
 * the majority's quorum queues elect leaders among themselves, and once the peers are back the node
 * resumes by itself.
 */
export async function minorityPartition(
  cluster: Cluster,
  holdMs: number,
  recoverMs: number,
): Promise<{ note: string; problems: string[] }> {
  const [a, b, cut] = cluster.nodes;
  const peers = `['${a.node}', '${b.node}']`;
  const startedAt = Date.now();
  // Not awaited: the CLI's answer can take as long as the hold (its tool node is refused too once
  // the cut is in place); the cut is observed from the majority's side instead.
  const cutting = cut
    .ctl(
      'eval',
      `Peers = ${peers}, ok = net_kernel:allow([node()]), [erlang:disconnect_node(P) || P <- Peers], Me = node(), spawn(fun() -> timer:sleep(${Math.round(holdMs)}), sys:replace_state(net_kernel, fun(S) -> list_to_tuple([case E of [Me | _] -> []; _ -> E end || E <- tuple_to_list(S)]) end) end), ok.`,
    )
    .then(
      () => undefined,
      (err: unknown) => err as Error,
    );
  const inMajority = async (node: string) =>
    (await a.ctl('eval', `lists:member('${node}', nodes()).`)).trim() === 'true';
  const seenCut = await eventually(
    'the majority sees the cut node gone',
    async () => ((await inMajority(cut.node)) ? false : Date.now()),
    recoverMs,
    200,
  ).catch(() => NaN);
  // Paused: its AMQP listener closed (pause_minority stops the broker application).
  const paused = await eventually(
    'the cut node paused (AMQP port closed)',
    async () => ((await accepts(cut.amqpPort)) ? false : Date.now()),
    recoverMs,
    200,
  ).catch(() => NaN);
  await sleep(Math.max(0, startedAt + holdMs - Date.now()));
  const healAt = Date.now();
  // Healed: back among the majority's nodes, serving AMQP again, no partition recorded, and every quorum queue with all its members online.
  const rejoinedAt = await eventually(
    'the cut node back in the cluster',
    async () => ((await inMajority(cut.node)) ? Date.now() : false),
    recoverMs,
    250,
  ).catch(() => NaN);
  const servingAt = await eventually(
    'the cut node serving AMQP again',
    async () => ((await accepts(cut.amqpPort)) ? Date.now() : false),
    recoverMs,
    250,
  ).catch(() => NaN);
  const partitions = await eventually(
    'no partition recorded',
    async () => {
      const status = JSON.parse(await a.ctl('cluster_status', '--formatter', 'json')) as {
        partitions?: Record<string, unknown>;
      };
      return Object.keys(status.partitions ?? {}).length === 0 ? Date.now() : false;
    },
    recoverMs,
    500,
  ).catch(() => NaN);
  const cutError = await cutting;
  const s = (t: number, from: number) => (Number.isFinite(t) ? `${((t - from) / 1000).toFixed(1)} s` : 'never');
  const note = `node 3 cut off for ${(holdMs / 1000).toFixed(0)} s: the majority saw it gone after ${s(seenCut, startedAt)}, it paused after ${s(paused, startedAt)}; after the heal back in the cluster ${s(rejoinedAt, healAt)}, serving AMQP ${s(servingAt, healAt)}, no partition recorded ${s(partitions, healAt)}`;
  const missing = (
    [
      [seenCut, 'the majority never saw the cut'],
      [paused, 'the minority node never paused'],
      [rejoinedAt, 'the node never rejoined'],
      [servingAt, 'the node never served AMQP again'],
      [partitions, 'a partition stayed recorded'],
    ] as Array<[number, string]>
  )
    .filter(([t]) => !Number.isFinite(t))
    .map(([, what]) => what);
  // The eval's own error (its answer lost with the cut) matters only if the cut never happened.
  if (!Number.isFinite(seenCut) && cutError) missing.push(`the cut: ${cutError.message.slice(0, 300)}`);
  return { note, problems: missing };
}

/** A TCP connection to 127.0.0.1:port is accepted. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.setTimeout(2000, () => done(false));
  });
}
