import { once } from 'node:events';
import net from 'node:net';

/**
 * A TCP port a test puts in front of a real server (Postgres, the broker), so that it can fail the
 * path to it without touching the server: only the test's own connections go through it.
 *
 * - `open()` forwards to `target`; `close()` cuts every connection through it at once and refuses
 *   new ones (ECONNREFUSED), as when the server is restarting or unreachable.
 * - `blackhole()` forwards nothing in either direction and closes nothing: existing sockets are
 *   paused (the kernel buffers fill, the peers' writes stall) and new connections are accepted but
 *   not forwarded, which is what a partition looks like to both ends until a timeout (heartbeat,
 *   keepalive) fires on one side. `heal()` forwards again; whatever was buffered flows on, as TCP
 *   retransmission would deliver it after a real partition heals.
 *
 * Hand-written (node:net, some 60 lines) rather than a library: toxiproxy needs its own server
 * binary, and the npm proxies do not pause without closing. One copy for the apps' tests and the
 * fault suite; libs/messaging keeps its own in its test support, as it may import no lib of ours.
 */
export interface TcpProxy {
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string;
  open(): Promise<void>;
  close(): Promise<void>;
  blackhole(): void;
  heal(): void;
}

type Pair = [net.Socket, net.Socket];

/** A proxy on `port` (a free one by default), closed until `open()`. */
export async function tcpProxy(target: { host: string; port: number }, port = 0): Promise<TcpProxy> {
  if (port === 0) {
    const probe = net.createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    port = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
  }
  const pairs = new Set<Pair>();
  let holed = false;
  let server: net.Server | undefined;
  // Unpiped and paused, a socket reads nothing more (pipe() would resume it on the peer's 'drain').
  const hold = ([a, b]: Pair) => {
    a.unpipe(b);
    b.unpipe(a);
    a.pause();
    b.pause();
  };
  const forward = ([a, b]: Pair) => {
    a.pipe(b);
    b.pipe(a);
  };
  return {
    port,
    rewrite(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    async open() {
      if (server) return;
      server = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        const pair: Pair = [client, upstream];
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
    },
    async close() {
      for (const pair of pairs) for (const s of pair) s.destroy();
      const open = server;
      server = undefined;
      if (open) await new Promise((r) => open.close(r));
    },
    blackhole() {
      holed = true;
      for (const pair of pairs) hold(pair);
    },
    heal() {
      holed = false;
      for (const pair of pairs) forward(pair);
    },
  };
}
