// Small network probes built on node:net / fetch, usable before dependencies are installed.
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { SetupError } from './log.mjs';

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]', '0.0.0.0']);

/** Is this URL host this machine (so we may start or install a service for it)? */
export const isLocalHost = (host) => LOCAL_HOSTS.has(host);

/** Hostname as net.connect wants it (no IPv6 brackets). */
export const bareHost = (host) => host.replace(/^\[(.*)\]$/, '$1');

/** Resolves true when a TCP connection to host:port succeeds within timeoutMs. */
export function tcpAnswers(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: bareHost(host), port, autoSelectFamily: true });
    const done = (ok) => {
      socket.removeAllListeners();
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Sends `hello` and resolves true when the first bytes of the reply satisfy accept(buffer):
 * proves a server of the right kind answers, not merely that something accepts TCP.
 */
export function handshake(host, port, hello, accept, timeoutMs = 2000) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: bareHost(host), port, autoSelectFamily: true });
    const done = (ok) => {
      socket.removeAllListeners();
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
    socket.once('connect', () => socket.write(hello));
    socket.once('data', (chunk) => done(accept(chunk)));
  });
}

/** AMQP 0-9-1: the protocol header is answered by a Connection.Start method frame (type 1). */
export const amqpProbe = (host, port) =>
  handshake(host, port, Buffer.from('AMQP\x00\x00\x09\x01', 'latin1'), (b) => b[0] === 1);

/** Redis: PING is answered by +PONG, or an error such as -NOAUTH / -LOADING (still a Redis). */
export const redisProbe = (host, port) => handshake(host, port, 'PING\r\n', (b) => b[0] === 0x2b || b[0] === 0x2d);

/**
 * Asks a PostgreSQL server whether it accepts connections, speaking just enough of the protocol
 * (a StartupMessage) to tell "up" from "still starting" (SQLSTATE 57P03) without a client library.
 * Resolves 'ready' | 'starting' | 'down'. Auth failures and missing databases count as 'ready':
 * the server is up, and the step that connects for real reports the precise error.
 */
export function pgProbe(host, port, user = 'postgres', timeoutMs = 2000) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: bareHost(host), port, autoSelectFamily: true });
    let buf = Buffer.alloc(0);
    const done = (state) => {
      socket.removeAllListeners();
      socket.destroy();
      resolve(state);
    };
    socket.setTimeout(timeoutMs, () => done('down'));
    socket.once('error', () => done('down'));
    socket.once('close', () => done('down'));
    socket.once('connect', () => {
      const params = Buffer.from(`user\0${user}\0database\0postgres\0\0`, 'utf8');
      const head = Buffer.alloc(8);
      head.writeInt32BE(8 + params.length, 0);
      head.writeInt32BE(196608, 4); // protocol 3.0
      socket.write(Buffer.concat([head, params]));
    });
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length < 1) return;
      const type = String.fromCharCode(buf[0]);
      if (type === 'R') return done('ready'); // authentication request or AuthenticationOk
      if (type !== 'E') return done('ready');
      if (buf.length < 5 || buf.length < 1 + buf.readInt32BE(1)) return; // wait for the whole error
      const fields = buf
        .subarray(5, 1 + buf.readInt32BE(1))
        .toString('utf8')
        .split('\0');
      const code = fields.find((f) => f.startsWith('C'))?.slice(1);
      done(code === '57P03' ? 'starting' : 'ready');
    });
  });
}

/** GET a URL (credentials may be in the URL), resolving { status, body } or null when unreachable. */
export async function httpGet(url, timeoutMs = 3000) {
  const u = new URL(url);
  const headers = {};
  if (u.username) {
    headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
    u.username = '';
    u.password = '';
  }
  try {
    const res = await fetch(u, { headers, signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let body = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body };
  } catch {
    return null;
  }
}

/**
 * Polls check() until it returns a truthy value, or throws SetupError(onTimeout) after timeoutMs.
 */
export async function waitFor(check, { timeoutMs, intervalMs = 500, onTimeout }) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() >= deadline) throw new SetupError(typeof onTimeout === 'function' ? onTimeout() : onTimeout);
    await sleep(intervalMs);
  }
}

/** Masks the password in a connection URL for logs. */
export function redact(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    const out = u.toString();
    return out.endsWith('/') && !url.endsWith('/') ? out.slice(0, -1) : out;
  } catch {
    return url;
  }
}
