import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { eventually, testLogger } from '@community/testing';
import { createNotificationService, type NotificationService } from '../src/service';
import { bearer, event, mention, startHarness, testConfig, type Harness } from './harness';

/**
 * The SSE stream, read with a plain HTTP client and parsed by hand: notifications published over
 * AMQP arrive, count changes arrive, heartbeats arrive, Last-Event-ID resumes without loss, and a
 * second replica (its own app and LISTEN connection) pushes changes another replica committed.
 */
let h: Harness;
let port: number;

beforeAll(async () => {
  h = await startHarness('sse', { heartbeatMs: 150, backlogLimit: 3 });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  port = (h.app.server.address() as AddressInfo).port;
});
afterAll(async () => h.close());

interface SseEvent {
  event?: string;
  id?: string;
  data?: unknown;
  comment?: string;
}

/** A minimal EventSource: one request, the body split into events as the spec defines them. */
class SseClient {
  readonly events: SseEvent[] = [];
  ended = false;
  private buffer = '';
  private req?: http.ClientRequest;
  status = 0;

  constructor(private readonly target: { port: number; user: string; token: string; lastEventId?: string }) {}

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = {
        authorization: `Bearer ${this.target.token}`,
        accept: 'text/event-stream',
      };
      if (this.target.lastEventId !== undefined) headers['last-event-id'] = this.target.lastEventId;
      this.req = http.get(
        {
          host: '127.0.0.1',
          port: this.target.port,
          path: `/v1/users/${this.target.user}/notifications/stream`,
          headers,
        },
        (res) => {
          this.status = res.statusCode ?? 0;
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => this.feed(chunk));
          res.on('end', () => (this.ended = true));
          res.on('close', () => (this.ended = true));
          resolve();
        },
      );
      this.req.on('error', (err) => (this.ended ? undefined : reject(err)));
    });
  }

  private feed(chunk: string): void {
    this.buffer += chunk;
    let cut: number;
    while ((cut = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      const ev: SseEvent = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) ev.comment = line.slice(1).trim();
        else if (line.startsWith('event: ')) ev.event = line.slice(7);
        else if (line.startsWith('id: ')) ev.id = line.slice(4);
        else if (line.startsWith('data: ')) ev.data = JSON.parse(line.slice(6));
      }
      this.events.push(ev);
    }
  }

  named(name: string): SseEvent[] {
    return this.events.filter((e) => e.event === name);
  }

  /** The Last-Event-ID a browser would send after this point. */
  lastId(): string | undefined {
    return this.events.filter((e) => e.id !== undefined).at(-1)?.id;
  }

  close(): void {
    this.req?.destroy();
  }
}

const client = (user: string, lastEventId?: string, p = port) =>
  new SseClient({ port: p, user, token: h.token(user), lastEventId });

it('pushes a notification published over AMQP, then the new count, and heartbeats', async () => {
  const user = `u-${randomUUID()}`;
  const c = client(user);
  await c.open();
  expect(c.status).toBe(200);
  await eventually('initial state', () => c.named('count').length === 1);
  expect(c.named('count')[0]).toMatchObject({ id: '0', data: { count: 0, version: 0 } });

  const m = mention(`c-${randomUUID()}`, 'actor-1', user);
  await h.publish(m);
  await eventually('notification pushed', () => c.named('notification').length === 1, 15_000, 10);
  await eventually('count pushed', () => c.named('count').length === 2, 15_000, 10);
  expect(c.named('notification')[0].data).toMatchObject({
    type: 'mention',
    actorId: 'actor-1',
    resourceType: 'comment',
    resourceId: m.data.commentId,
    readAt: null,
  });
  expect(c.named('count')[1].data).toMatchObject({ count: 1 });
  // The notification comes before the count whose id covers it.
  expect(c.events.findIndex((e) => e.event === 'notification')).toBeLessThan(
    c.events.findIndex((e) => e.event === 'count' && e.id !== '0'),
  );

  await eventually('a heartbeat', () => c.events.some((e) => e.comment?.startsWith('heartbeat')), 15_000, 20);

  // A read elsewhere (HTTP) reaches the stream as a count change.
  const id = (c.named('notification')[0].data as { id: string }).id;
  await h.app.inject({
    method: 'POST',
    url: `/v1/users/${user}/notifications/${id}/read`,
    headers: bearer(h.token(user)),
  });
  await eventually(
    'count after read',
    () => c.named('count').some((e) => (e.data as { count: number }).count === 0 && e.id !== '0'),
    15_000,
    10,
  );
  c.close();
});

it('resumes with Last-Event-ID: exactly the notifications missed while disconnected', async () => {
  const user = `u-${randomUUID()}`;
  const first = client(user);
  await first.open();
  await h.publish(mention(`c-before-${randomUUID()}`, 'actor-1', user));
  await eventually('first notification', () => first.named('notification').length === 1, 15_000, 10);
  await eventually('its count', () => first.named('count').length === 2, 15_000, 10);
  const lastId = first.lastId();
  first.close();

  const missed = [
    mention(`c-missed-1-${randomUUID()}`, 'actor-2', user),
    mention(`c-missed-2-${randomUUID()}`, 'actor-3', user),
  ];
  for (const m of missed) await h.publish(m);
  await eventually('both committed', async () => {
    const res = await h.app.inject({
      url: `/v1/users/${user}/notifications/unread-count`,
      headers: bearer(h.token(user)),
    });
    return res.json().count === 3;
  });

  const resumed = client(user, lastId);
  await resumed.open();
  await eventually('replayed state', () => resumed.named('count').length >= 1, 15_000, 10);
  const replayed = resumed
    .named('notification')
    .map((e) => (e.data as { resourceId: string }).resourceId)
    .sort();
  expect(replayed).toEqual(missed.map((m) => m.data.commentId).sort());
  expect(resumed.named('count')[0].data).toMatchObject({ count: 3 });
  resumed.close();
});

it('a resume that missed more than it replays says so (reset), then sends the newest', async () => {
  const user = `u-${randomUUID()}`;
  const first = client(user);
  await first.open();
  await eventually('initial state', () => first.named('count').length === 1);
  const lastId = first.lastId();
  first.close();
  const missed = Array.from({ length: 5 }, (_, i) => mention(`c-${i}-${randomUUID()}`, 'actor-1', user));
  await h.publish(missed[0]);
  await eventually(
    'first committed',
    async () =>
      (
        await h.app.inject({ url: `/v1/users/${user}/notifications/unread-count`, headers: bearer(h.token(user)) })
      ).json().count === 1,
  );
  for (const m of missed.slice(1)) await h.publish(m); // later batches: later versions
  await eventually(
    'all committed',
    async () =>
      (
        await h.app.inject({ url: `/v1/users/${user}/notifications/unread-count`, headers: bearer(h.token(user)) })
      ).json().count === 5,
  );

  const resumed = client(user, lastId);
  await resumed.open();
  await eventually('replayed state', () => resumed.named('count').length >= 1, 15_000, 10);
  expect(resumed.events.filter((e) => e.event !== undefined).map((e) => e.event)).toEqual([
    'reset',
    'notification',
    'notification',
    'notification',
    'count',
  ]);
  const replayed = resumed.named('notification').map((e) => (e.data as { resourceId: string }).resourceId);
  expect(replayed).not.toContain(missed[0].data.commentId); // the oldest is the one left out
  resumed.close();
});

it('keeps pushing after its LISTEN connection is terminated (it reconnects on its own)', async () => {
  const user = `u-${randomUUID()}`;
  const c = client(user);
  await c.open();
  await eventually('initial state', () => c.named('count').length === 1);
  const listenerPids = async () =>
    (
      await h.pool.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'notification-service-sse'",
      )
    ).rows.map((r) => r.pid);
  const [pid] = await listenerPids();
  expect(pid).toBeDefined();

  await h.pool.query('SELECT pg_terminate_backend($1)', [pid]); // this test's own database only
  await eventually(
    'listening on a new connection',
    async () => h.hub.isListening() && (await listenerPids()).some((p) => p !== pid),
    10_000,
    20,
  );
  expect((await h.metrics.sseListenerConnected.get()).values[0].value).toBe(1);

  await h.publish(mention(`c-${randomUUID()}`, 'actor-1', user));
  await eventually('pushed after the reconnect', () => c.named('notification').length === 1, 15_000, 10);
  c.close();
});

describe('another replica', () => {
  let replica: NotificationService;
  let app2: FastifyInstance;
  let port2: number;

  beforeAll(async () => {
    // Same database, its own pool and LISTEN connection; no broker, so it can only learn of the
    // first replica's commits through NOTIFY.
    replica = createNotificationService(testConfig(h.db, undefined), {
      logger: testLogger(),
      registry: new Registry(),
      messaging: false,
    });
    await replica.start();
    app2 = replica.app;
    await app2.listen({ port: 0, host: '127.0.0.1' });
    port2 = (app2.server.address() as AddressInfo).port;
  });
  // The test itself closes app2 (which ends its pool); stop() ends its LISTEN connection.
  afterAll(async () => replica.stop());

  it('streams what a different replica committed, and closing the app ends its streams', async () => {
    const user = `u-${randomUUID()}`;
    const c = client(user, undefined, port2);
    await c.open();
    await eventually('initial state', () => c.named('count').length === 1);
    await h.publish(mention(`c-${randomUUID()}`, 'actor-1', user)); // consumed by the first replica
    await eventually('pushed by the second replica', () => c.named('notification').length === 1, 15_000, 10);

    // Without the preClose hook that ends the streams, close() waits for the open stream forever
    // (fastify waits for in-flight requests): the condition is that it returns at all, and that the
    // server ended the stream. The deadline only turns a hang into a readable failure.
    let hang: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      app2.close().then(() => 'closed' as const),
      new Promise<'hung'>((resolve) => (hang = setTimeout(() => resolve('hung'), 30_000))),
    ]);
    clearTimeout(hang);
    expect(closed).toBe('closed');
    await eventually('stream ended by the server', () => c.ended, 15_000, 10);
  });
});

it('sends `withdrawn` with the id when a notification is withdrawn (its comment deleted), live and on resume', async () => {
  const user = `u-${randomUUID()}`;
  const live = client(user);
  await live.open();
  await eventually('initial state', () => live.named('count').length === 1);
  const m = mention(`c-${randomUUID()}`, 'actor-1', user);
  await h.publish(m);
  await eventually('notification pushed', () => live.named('notification').length === 1, 15_000, 10);
  const id = (live.named('notification')[0].data as { id: string }).id;
  await eventually('count 1', () => live.named('count').some((e) => (e.data as { count: number }).count === 1));
  const before = live.lastId();

  await h.publish(
    event('comment.deleted', { commentId: m.data.commentId, postId: m.data.postId, authorId: 'actor-1' }),
  );
  await eventually('withdrawn pushed', () => live.named('withdrawn').length === 1, 15_000, 10);
  expect(live.named('withdrawn')[0].data).toEqual({ id });
  // Then the count without it.
  await eventually('count 0', () => (live.named('count').at(-1)?.data as { count: number }).count === 0);
  live.close();

  // A client that saw the notification and reconnects after the withdrawal learns it too.
  const resumed = client(user, before);
  await resumed.open();
  await eventually('resumed', () => resumed.named('count').length === 1);
  expect(resumed.named('withdrawn').map((e) => e.data)).toEqual([{ id }]);
  resumed.close();
  // A fresh stream (no Last-Event-ID) starts from the current state: nothing to drop.
  const fresh = client(user);
  await fresh.open();
  await eventually('fresh', () => fresh.named('count').length === 1);
  expect(fresh.named('withdrawn')).toEqual([]);
  fresh.close();
});
