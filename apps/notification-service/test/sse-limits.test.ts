import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { eventually, testLogger } from '@community/testing';
import { createNotificationService, type NotificationService } from '../src/service';
import { startHarness, testConfig, type Harness } from './harness';

/**
 * The stream's limits, by count: at most SSE_MAX_STREAMS_PER_USER (5) streams of one inbox per
 * replica (the next: 429 NS_TOO_MANY_STREAMS), at most SSE_MAX_STREAMS per replica (the next: 503
 * NS_STREAMS_FULL), both with Retry-After. And a stream ends when its token expires: a last
 * `token-expired` event, then the end of the response.
 */
let h: Harness;
let port: number;

beforeAll(async () => {
  h = await startHarness('sse-limits', { amqp: false });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  port = (h.app.server.address() as AddressInfo).port;
});
afterAll(async () => h.close());

interface Stream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Named events in order, with their data. */
  events: Array<{ event: string; data: unknown }>;
  /** The whole body (for refusals: the JSON error). */
  text: string;
  ended: boolean;
  close(): void;
}

/** One GET of the stream with a plain HTTP client; resolves when the response head arrived. */
function openStream(user: string, token: string, p = port): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      {
        host: '127.0.0.1',
        port: p,
        path: `/v1/users/${user}/notifications/stream`,
        headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      },
      (res) => {
        const s: Stream = {
          status: res.statusCode ?? 0,
          headers: res.headers,
          events: [],
          text: '',
          ended: false,
          close: () => req.destroy(),
        };
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          s.text += chunk;
          buffer += chunk;
          let cut: number;
          while ((cut = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (event) s.events.push({ event, data: data === undefined ? undefined : JSON.parse(data) });
          }
        });
        res.on('end', () => (s.ended = true));
        res.on('close', () => (s.ended = true));
        resolve(s);
      },
    );
    req.on('error', reject);
  });
}

/** Opens a stream and waits until the hub holds it (its first `count` event arrived). */
async function held(user: string, p = port): Promise<Stream> {
  const s = await openStream(user, h.token(user), p);
  expect(s.status).toBe(200);
  await eventually(`stream of ${user} synced`, () => s.events.some((e) => e.event === 'count'));
  return s;
}

it('refuses the stream past SSE_MAX_STREAMS_PER_USER (5) of one inbox with 429, a reason and Retry-After; others are not affected', async () => {
  const user = `u-${randomUUID()}`;
  const open = [];
  for (let i = 0; i < 5; i++) open.push(await held(user));

  const sixth = await openStream(user, h.token(user));
  expect(sixth.status).toBe(429);
  expect(sixth.headers['retry-after']).toBe('30');
  await eventually('the refusal body', () => sixth.ended);
  expect(JSON.parse(sixth.text)).toEqual({
    statusCode: 429,
    code: 'NS_TOO_MANY_STREAMS',
    error: 'Too Many Requests',
    message: expect.stringContaining('already has 5 open streams'),
  });

  // Another inbox still opens; and once one of the five closes, the user may open one again.
  const other = await held(`u-${randomUUID()}`);
  open[0].close();
  await eventually('a place freed by the closed stream', async () => {
    const again = await openStream(user, h.token(user));
    again.close();
    return again.status === 200;
  });
  for (const s of [...open, other]) s.close();
});

describe('a replica with SSE_MAX_STREAMS = 3', () => {
  let replica: NotificationService;
  let port2: number;

  beforeAll(async () => {
    replica = createNotificationService(
      { ...testConfig(h.db, undefined), SSE_MAX_STREAMS: 3 },
      { logger: testLogger(), registry: new Registry(), messaging: false },
    );
    await replica.start();
    await replica.app.listen({ port: 0, host: '127.0.0.1' });
    port2 = (replica.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await replica.stop();
    await replica.app.close();
  });

  it('refuses the fourth stream (any user) with 503, a reason and Retry-After', async () => {
    const open = [];
    for (let i = 0; i < 3; i++) open.push(await held(`u-${randomUUID()}`, port2));
    const user = `u-${randomUUID()}`;
    const fourth = await openStream(user, h.token(user), port2);
    expect(fourth.status).toBe(503);
    expect(fourth.headers['retry-after']).toBe('5');
    await eventually('the refusal body', () => fourth.ended);
    expect(JSON.parse(fourth.text)).toMatchObject({
      statusCode: 503,
      code: 'NS_STREAMS_FULL',
      message: expect.stringContaining('maximum of 3 streams'),
    });
    for (const s of open) s.close();
  });
});

it('ends the stream when its token expires: a last token-expired event, then the end of the response', async () => {
  const user = `u-${randomUUID()}`;
  // The app's own signer (its issuer, audience), with an expiry a few seconds ahead.
  const token = h.app.jwt.sign({ sub: user }, { expiresIn: '3s' });
  const exp = (JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { exp: number }).exp;
  const s = await openStream(user, token);
  expect(s.status).toBe(200);
  await eventually('synced', () => s.events.some((e) => e.event === 'count'));

  await eventually('the server ended the stream', () => s.ended, 60_000, 50);
  expect(s.events.at(-1)).toEqual({
    event: 'token-expired',
    data: {
      reason: expect.stringContaining('reconnect with a new token'),
      expiredAt: new Date(exp * 1000).toISOString(),
    },
  });
  // Nothing was sent after it: it is the last event and the stream is over.
  expect(s.text.trimEnd().endsWith('}')).toBe(true);
});

it('answers HEAD of the stream route without opening a stream (no automatic HEAD route running the handler)', async () => {
  const user = `head-${randomUUID().slice(0, 8)}`;
  const res = await h.app.inject({
    method: 'HEAD',
    url: `/v1/users/${user}/notifications/stream`,
    headers: { authorization: `Bearer ${h.token(user)}` },
  });
  expect(res.statusCode).toBe(404);
  // None of the user's places is taken: five streams still open, the sixth is the one refused.
  const streams = await Promise.all(Array.from({ length: 5 }, () => held(user)));
  const sixth = await openStream(user, h.token(user));
  expect(sixth.status).toBe(429);
  for (const s of [...streams, sixth]) s.close();
});
