import { once } from 'node:events';
import net from 'node:net';

/**
 * A TCP proxy the fault suite puts between one service and a dependency (copied in spirit from
 * libs/messaging's test support, which is private to that lib, and extended with a blackhole).
 *
 * `blackhole()` stops forwarding bytes in both directions without closing anything: existing
 * sockets are paused (the kernel buffers fill, the peers' writes stall), and new connections are
 * accepted but not forwarded, exactly what a partition looks like to both ends until a timeout
 * (heartbeat, keepalive) fires on one side. `heal()` resumes forwarding; whatever was buffered
 * flows on, as TCP retransmission would deliver it after a real partition heals.
 *
 * Hand-written (node:net, some 50 lines) rather than a library: toxiproxy needs its own server
 * binary, and the npm proxies do not pause without closing.
 */
export interface TcpProxy {
  port: number;
  blackhole(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }, port = 0): Promise<TcpProxy> {
  const pairs = new Set<[net.Socket, net.Socket]>();
  let holed = false;
  // Unpiped and paused, a socket reads nothing more (pipe() would resume it on the peer's 'drain').
  const hold = ([a, b]: [net.Socket, net.Socket]) => {
    a.unpipe(b);
    b.unpipe(a);
    a.pause();
    b.pause();
  };
  const forward = ([a, b]: [net.Socket, net.Socket]) => {
    a.pipe(b);
    b.pipe(a);
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    for (const s of pair) {
      s.on('error', () => undefined);
      s.on('close', () => {
        pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      });
    }
    if (holed) hold(pair);
    else forward(pair);
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    blackhole() {
      holed = true;
      for (const pair of pairs) hold(pair);
    },
    heal() {
      holed = false;
      for (const pair of pairs) forward(pair);
    },
    async close() {
      for (const pair of pairs) for (const s of pair) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
