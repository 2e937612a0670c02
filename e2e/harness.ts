import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { eventually } from '@community/testing';

/**
 * End-to-end harness: the real apps as separate processes (as `npm start` runs them), against a
 * test vhost, a test database and an SMTP server the test controls.
 */
const ROOT = path.resolve(__dirname, '..');

export interface App {
  name: string;
  port: number;
  proc: ChildProcess;
  url: string;
  output: string[];
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

export async function startApp(name: string, port: number, env: Record<string, string>): Promise<App> {
  const proc = spawn(process.execPath, ['-r', '@swc-node/register', path.join(ROOT, 'apps', name, 'src', 'main.ts')], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  proc.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
  proc.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
  const app = { name, port, proc, url: `http://127.0.0.1:${port}`, output };
  await eventually(`${name} ready`, async () => {
    if (proc.exitCode !== null) throw new Error(`${name} exited ${proc.exitCode}: ${output.join('').slice(-2000)}`);
    const res = await fetch(`${app.url}/readyz`).catch(() => undefined);
    return res?.status === 200;
  }, 30_000, 200);
  return app;
}

export async function stopApp(app: App, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | string | null> {
  if (app.proc.exitCode !== null) return app.proc.exitCode;
  app.proc.kill(signal);
  const [code, sig] = await once(app.proc, 'exit');
  return sig ?? code;
}

export interface ReceivedMail {
  to: string[];
  raw: string;
  messageId: string | undefined;
  subject: string | undefined;
}

export async function startSmtpSink(): Promise<{ port: number; mails: ReceivedMail[]; close(): Promise<void> }> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const header = (name: string) => raw.match(new RegExp(`^${name}:\\s*(.+)$`, 'mi'))?.[1]?.trim();
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw, messageId: header('Message-ID'), subject: header('Subject') });
        callback();
      });
    },
  });
  // A client killed mid-session (kill -9 of email-service) resets its connection: the server emits
  // 'error', which would crash the test process without a listener. The sink only records.
  server.on('error', () => undefined);
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { port, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** An HS256 JWT, as the community site would issue for its users. */
export function jwt(secret: string, claims: Record<string, unknown>): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ iat: Math.floor(Date.now() / 1000), ...claims })}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}

export async function http<T = unknown>(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}
