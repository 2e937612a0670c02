import { once } from 'node:events';
import net from 'node:net';

/**
 * A TCP port the test opens and closes: closed, a client gets "connection refused", as when the
 * management API is unreachable; open, it forwards to `target`.
 */
export interface TcpProxy {
  port: number;
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
    async open() {
      server = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => undefined);
        }
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
