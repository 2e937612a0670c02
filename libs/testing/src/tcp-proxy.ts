import { once } from 'node:events';
import net from 'node:net';

/**
 * A TCP port the test opens and closes in front of a real server (Postgres, the broker): open, it
 * forwards to `target`; closed, every connection through it is cut at once and new ones are
 * refused (ECONNREFUSED), as when the server is restarting or unreachable. Only the test's own
 * connections go through it, so the shared server is never touched.
 * (libs/messaging keeps its own copy in its test support: it may import no lib of ours.)
 */
export interface TcpProxy {
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string;
  open(): Promise<void>;
  close(): Promise<void>;
}

export async function tcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const probe = net.createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise((r) => probe.close(r));
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
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
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => undefined);
        }
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
    async close() {
      for (const s of sockets) s.destroy();
      const open = server;
      server = undefined;
      if (open) await new Promise((r) => open.close(r));
    },
  };
}
