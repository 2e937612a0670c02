import { connect } from 'node:net';
import type { BadRequest } from './request-types';

export interface Answer {
  status: number;
  body: string;
  /** Set when no HTTP answer came back at all (connection reset, timeout). */
  transportError?: string;
}

const TIMEOUT_MS = 15_000;

/**
 * An oversized body is refused (413) as soon as its Content-Length is seen, and the server closes
 * while the client may still be writing: the client's write then fails (EPIPE, ECONNRESET) and,
 * with the server's unread bytes answered by a reset, the kernel can drop the 413 before it is read.
 * That is HTTP/1.1 over TCP, not the app's answer (a few in a thousand such requests here). Such a
 * request is sent again, up to 3 times; it must still end in a 4xx with a reason.
 */
const EARLY_CLOSE = /EPIPE|ECONNRESET|other side closed|socket hang up/;
const LARGE_BODY = 64 * 1024;
/**
 * A kept-alive connection that the app closed as idle just as fetch reused it: the request never
 * reached the app, and undici reports UND_ERR_SOCKET ("other side closed"). Its keep-alive timer
 * and the server's race when a loaded machine delays either (seen on each app's first request
 * after the minutes-long message phase). Any request is sent again once after such an error; an
 * app that really drops connections does it again, and fails the check.
 */
const STALE_SOCKET = /UND_ERR_SOCKET|other side closed/;
export let earlyCloseRetries = 0;
export let staleSocketRetries = 0;

export async function send(baseUrl: string, req: BadRequest): Promise<Answer> {
  if (req.raw) return sendRaw(baseUrl, req.raw);
  const large =
    typeof req.body === 'string' ? Buffer.byteLength(req.body) > LARGE_BODY : (req.body?.length ?? 0) > LARGE_BODY;
  let answer = await sendOnce(baseUrl, req);
  if (answer.transportError && STALE_SOCKET.test(answer.transportError)) {
    staleSocketRetries++;
    answer = await sendOnce(baseUrl, req);
  }
  for (let retry = 0; large && retry < 3 && answer.transportError && EARLY_CLOSE.test(answer.transportError); retry++) {
    earlyCloseRetries++;
    answer = await sendOnce(baseUrl, req);
  }
  return answer;
}

async function sendOnce(baseUrl: string, req: BadRequest): Promise<Answer> {
  try {
    const res = await fetch(`${baseUrl}${req.path}`, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    return { status: res.status, body: await res.text() };
  } catch (err) {
    return { status: 0, body: '', transportError: describe(err) };
  }
}

/** Byte for byte over a socket; the server may answer and close before reading it all. */
function sendRaw(baseUrl: string, bytes: Buffer): Promise<Answer> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname);
    const done = (transportError?: string) => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const body = text.slice(text.indexOf('\r\n\r\n') + 4);
      resolve(
        m
          ? { status: Number(m[1]), body }
          : { status: 0, body: text, transportError: transportError ?? 'no HTTP status line in the answer' },
      );
    };
    const timer = setTimeout(() => done('timed out'), TIMEOUT_MS);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => done());
    socket.on('close', () => done());
    // EPIPE/ECONNRESET after the server answered early: the answer is what counts.
    socket.on('error', (err) => done(describe(err)));
    socket.write(bytes);
  });
}

function describe(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  return [e.message, e.cause?.code ?? e.cause?.message].filter(Boolean).join(': ');
}

/** `{ statusCode, error, message }` with a message that says something: the reason of a 4xx. */
export function hasReason(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as { message?: unknown; error?: unknown };
    return typeof parsed.message === 'string' && parsed.message.trim().length > 0 && typeof parsed.error === 'string';
  } catch {
    return false;
  }
}

/** Runs `work` over `items` with at most `concurrency` in flight, in order of the items. */
export async function pool<T, R>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]);
      }
    }),
  );
  return results;
}
