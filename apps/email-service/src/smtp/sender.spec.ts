import net from 'node:net';
import { Registry } from 'prom-client';
import { eventually, testLogger } from '@community/testing';
import { emailMetrics } from '../metrics';
import { ProviderBreaker } from './breaker';
import { SmtpAbortedError, SmtpTransientError } from './errors';
import { createRateLimiter } from './rate-limiter';
import { createSender, type OutgoingEmail } from './sender';
import { createTransport } from './transport';

const mail = (n: number): OutgoingEmail => ({
  messageId: `<m${n}@test>`,
  to: { name: 'A', address: 'a@example.com' },
  subject: 's',
  text: 't',
  html: '<p>t</p>',
  headers: {},
});

/** A provider that accepts connections and never says a word: every send is in flight until aborted. */
async function silentServer(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => sockets.size,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function stack(port: number, threshold: number) {
  const metrics = emailMetrics(new Registry());
  const transport = createTransport({
    url: `smtp://127.0.0.1:${port}`,
    poolSize: 5,
    connectionTimeoutMs: 10_000,
    socketTimeoutMs: 10_000,
  });
  const breaker = new ProviderBreaker({
    threshold,
    probeMinMs: 60_000,
    probeMaxMs: 60_000,
    probe: async () => undefined,
    logger: testLogger(),
    metrics,
  });
  const sender = createSender({ transport, limiter: createRateLimiter(0), breaker, metrics, from: 'x@example.com' });
  return { breaker, sender, metrics };
}

describe('sender and the breaker', () => {
  it('a forced shutdown aborting sends in flight is not a provider failure: the breaker stays closed', async () => {
    const server = await silentServer();
    const { breaker, sender, metrics } = stack(server.port, 3);
    try {
      const shutdown = new AbortController();
      const inFlight = [1, 2, 3, 4, 5].map((n) =>
        sender.send(mail(n), 'immediate', shutdown.signal).then(
          () => undefined,
          (err: unknown) => err,
        ),
      );
      // Every send is on a connection of its own (pool of 5), waiting for a greeting that never comes.
      await eventually('five sends connected', () => server.connections() === 5, 10_000, 5);
      shutdown.abort(new Error('forced shutdown'));
      const errors = await Promise.all(inFlight);
      for (const err of errors) expect(err).toBeInstanceOf(SmtpAbortedError);
      expect(breaker.describe()).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
      expect((await metrics.sends.get()).values.find((v) => v.labels.outcome === 'aborted')?.value).toBe(5);
    } finally {
      sender.close();
      await breaker.stop();
      await server.close();
    }
  });

  it('a provider that refuses connections still opens it (the control: the test can see a failure)', async () => {
    const server = await silentServer();
    const port = server.port;
    await server.close(); // nothing listens there any more: ECONNREFUSED
    const { breaker, sender } = stack(port, 3);
    try {
      for (const n of [1, 2, 3])
        await expect(sender.send(mail(n), 'immediate')).rejects.toBeInstanceOf(SmtpTransientError);
      expect(breaker.state).toBe('open');
    } finally {
      sender.close();
      await breaker.stop();
    }
  });
});
