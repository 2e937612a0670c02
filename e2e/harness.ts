import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import {
  DEFAULT_USER_TOKEN_AUDIENCE,
  DEFAULT_USER_TOKEN_ISSUER,
  DEV_ADMIN_KEY_ID,
  DEV_ADMIN_SIGNING_KEY,
} from '@community/config';
import { adminTokenSigner } from '@community/service';
import { appProcessArgs, eventually, freePort } from '@community/testing';

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

/**
 * The variables every e2e run of the apps shares: the user-token secret, the test's SMTP server
 * with no rate limit, how the apps reach each other, and no demo traffic. A test adds its broker
 * and database URLs (and whatever else it needs) on top.
 */
export function appsEnv(o: {
  secret: string;
  smtpPort: number;
  notificationsPort: number;
  emailPort: number;
}): Record<string, string> {
  return {
    JWT_SECRET: o.secret,
    SMTP_URL: `smtp://127.0.0.1:${o.smtpPort}`,
    SMTP_RATE_PER_SECOND: '0',
    NOTIFICATION_SERVICE_URL: `http://127.0.0.1:${o.notificationsPort}`,
    UNSUBSCRIBE_BASE_URL: `http://127.0.0.1:${o.emailPort}`,
    DEMO_TRAFFIC_RATE: '0',
  };
}

export async function startApp(name: string, port: number, env: Record<string, string>): Promise<App> {
  const proc = spawn(process.execPath, appProcessArgs(name), {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  proc.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
  proc.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
  const app = { name, port, proc, url: `http://127.0.0.1:${port}`, output };
  await eventually(
    `${name} ready`,
    async () => {
      if (proc.exitCode !== null) throw new Error(`${name} exited ${proc.exitCode}: ${output.join('').slice(-2000)}`);
      const res = await fetch(`${app.url}/readyz`).catch(() => undefined);
      return res?.status === 200;
    },
    60_000,
    200,
  ); // generous: a loaded 2-core machine has taken over 30 s to compile and start an app
  return app;
}

/**
 * Runs a test body and, when it fails, appends the tail of every app's log to the error: a wait that
 * never ends on a loaded CI machine is then explained by what the apps said, not only by its name.
 */
export async function explainedBy(apps: Iterable<App | undefined>, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    const tails = [...apps]
      .filter((a): a is App => a !== undefined)
      .map((a) => `--- ${a.name} (last 3000 characters of its log)\n${a.output.join('').slice(-3000)}`);
    if (err instanceof Error) err.message = `${err.message}\n${tails.join('\n')}`;
    throw err;
  }
}

export async function stopApp(app: App, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | string | null> {
  // Already gone (by an exit code, or by a signal: exitCode stays null then): its 'exit' has fired
  // and will not fire again, so waiting for it would hang.
  if (app.proc.exitCode !== null || app.proc.signalCode !== null) return app.proc.signalCode ?? app.proc.exitCode;
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

export interface SmtpSink {
  port: number;
  mails: ReceivedMail[];
  /** Replies refused during a storm, by code. */
  refused: Map<number, number>;
  /** Stops listening and drops every open session: the port refuses connections (SMTP down). */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  /**
   * A storm of temporary failures: while `fraction` > 0, that share of the messages is answered
   * 421 or 451 (alternately) at the end of DATA instead of 250, and not kept. 0 ends the storm.
   */
  storm(fraction: number): void;
  close(): Promise<void>;
}

export async function startSmtpSink(): Promise<SmtpSink> {
  const mails: ReceivedMail[] = [];
  const refused = new Map<number, number>();
  let fraction = 0;
  let seen = 0;
  const create = () => {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      // At down(), open sessions are cut at once (default: 30 s of grace), as when the server dies.
      closeTimeout: 50,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          // Deterministic share: every message whose running number falls under the fraction.
          if (fraction > 0 && seen++ % 100 < fraction * 100) {
            const code = seen % 2 === 0 ? 421 : 451;
            refused.set(code, (refused.get(code) ?? 0) + 1);
            callback(
              Object.assign(
                new Error(
                  code === 421 ? 'Service not available, closing channel (storm)' : 'Local error in processing (storm)',
                ),
                { responseCode: code },
              ),
            );
            return;
          }
          const raw = Buffer.concat(chunks).toString('utf8');
          const header = (name: string) => raw.match(new RegExp(`^${name}:\\s*(.+)$`, 'mi'))?.[1]?.trim();
          mails.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            raw,
            messageId: header('Message-ID'),
            subject: header('Subject'),
          });
          callback();
        });
      },
    });
    // A client killed mid-session (kill -9 of email-service) resets its connection: the server emits
    // 'error', which would crash the test process without a listener. The sink only records.
    server.on('error', () => undefined);
    return server;
  };
  const port = await freePort();
  let server: SMTPServer | undefined;
  const up = async () => {
    if (server) return;
    const s = create();
    await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', resolve));
    server = s;
  };
  const down = async () => {
    const s = server;
    server = undefined;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await up();
  return {
    port,
    mails,
    refused,
    down,
    up,
    storm(f) {
      fraction = f;
    },
    close: down,
  };
}

/**
 * An HS256 JWT, as the community site issues for its users: the development iss/aud the apps check
 * by default (USER_TOKEN_ISSUER, USER_TOKEN_AUDIENCE), iat, and a 10-minute exp; `claims` override.
 */
export function jwt(secret: string, claims: Record<string, unknown>): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const iat = Math.floor(Date.now() / 1000);
  const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ iss: DEFAULT_USER_TOKEN_ISSUER, aud: DEFAULT_USER_TOKEN_AUDIENCE, iat, exp: iat + 600, ...claims })}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}

/**
 * An operator's admin token for `audience` (a service name), signed with the development operator's
 * key that the apps' default ADMIN_KEYS trusts; or with a key of the test's own (libs/testing `testOperators`).
 */
export function adminJwt(
  audience: string,
  key: { kid: string; privateKeyPem: string } = { kid: DEV_ADMIN_KEY_ID, privateKeyPem: DEV_ADMIN_SIGNING_KEY },
): string {
  return adminTokenSigner({ signingKey: key.privateKeyPem, kid: key.kid, audience })();
}

const HTTP_TIMEOUT_MS = 20_000;

export async function http<T = unknown>(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    // A request no app answers fails here, named, and `eventually` retries it; without a bound,
    // fetch waits up to undici's 300-s header timeout, longer than any test, and the test ends in a
    // bare jest timeout that says nothing about which request hung.
    signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
  }).catch((err: Error) => {
    throw new Error(
      `${method} ${url}: ${err.name === 'TimeoutError' ? `no answer in ${HTTP_TIMEOUT_MS} ms` : err.message}`,
    );
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** Re-exported: tests built on this harness import it from here. */
export { freePort };
