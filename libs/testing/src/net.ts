import { once } from 'node:events';
import { createServer } from 'node:net';

/**
 * A TCP port free on 127.0.0.1 right now (the kernel picks it): for a private Redis, an app's HTTP
 * server or a proxy a test or benchmark starts. Another process may take it before it is bound
 * again, which is why callers bind it at once.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** The median of a benchmark's rounds (the upper middle one for an even count). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error('median of no values');
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}
