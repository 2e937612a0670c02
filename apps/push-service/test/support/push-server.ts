import { createECDH, createPublicKey, randomBytes, randomUUID, verify, type ECDH } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decrypt } from 'http_ece';

/** What the test push service answers one request with. */
export interface Answer {
  status: number;
  headers?: Record<string, string>;
}

/** One POST the push service received, checked and decrypted as a browser's push service and browser would. */
export interface ReceivedPush {
  subscription: string;
  headers: IncomingMessage['headers'];
  /** The VAPID JWT's claims, once its ES256 signature verified with the `k=` key. */
  vapid: { publicKey: string; claims: { aud: string; exp: number; sub: string } };
  /** The decrypted payload (aes128gcm, with the subscription's private key and auth secret). */
  plaintext: string;
  answered: number;
}

/** A browser subscription made here: the keys a browser would hold, and the JSON it would post. */
export interface TestSubscription {
  id: string;
  endpoint: string;
  json: { endpoint: string; expirationTime: null; keys: { p256dh: string; auth: string } };
  ecdh: ECDH;
  auth: Buffer;
  /** Answers to give, in order; once used up, 201. */
  answers: Answer[];
}

/**
 * A push service of the test's own (RFC 8030 on plain http, on 127.0.0.1): it verifies each
 * request's VAPID Authorization (RFC 8292: `vapid t=<JWT>, k=<key>`, the JWT's ES256 signature with
 * that key), decrypts the body with the subscription's keys (generated here like a browser's:
 * ECDH prime256v1 and a 16-byte auth secret) with http_ece, records it, and answers what the
 * scenario says. A request that fails verification or decryption is answered 400 and recorded in `refused`.
 */
export class TestPushServer {
  readonly received: ReceivedPush[] = [];
  readonly refused: string[] = [];
  private readonly subscriptions = new Map<string, TestSubscription>();
  private server: Server | undefined;
  private base = '';

  async start(): Promise<this> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const answer = this.handle(req, Buffer.concat(chunks));
        res.writeHead(answer.status, answer.headers ?? {});
        res.end();
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  subscribe(answers: Answer[] = []): TestSubscription {
    const id = randomUUID();
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const auth = randomBytes(16);
    const endpoint = `${this.base}/push/${id}`;
    const sub: TestSubscription = {
      id,
      endpoint,
      ecdh,
      auth,
      answers: [...answers],
      json: {
        endpoint,
        expirationTime: null,
        keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') },
      },
    };
    this.subscriptions.set(id, sub);
    return sub;
  }

  for(sub: TestSubscription): ReceivedPush[] {
    return this.received.filter((r) => r.subscription === sub.id);
  }

  private handle(req: IncomingMessage, body: Buffer): Answer {
    const id = req.url?.match(/^\/push\/([^/?]+)$/)?.[1];
    const sub = id ? this.subscriptions.get(id) : undefined;
    if (!sub || req.method !== 'POST') {
      this.refused.push(`${req.method} ${req.url}: no such subscription`);
      return { status: 404 };
    }
    let vapid: ReceivedPush['vapid'];
    let plaintext: string;
    try {
      vapid = verifyVapid(String(req.headers.authorization ?? ''));
      if (req.headers['content-encoding'] !== 'aes128gcm')
        throw new Error(`content-encoding ${req.headers['content-encoding']}`);
      plaintext = decrypt(body, { version: 'aes128gcm', privateKey: sub.ecdh, authSecret: sub.auth }).toString('utf8');
    } catch (err) {
      this.refused.push(`${req.url}: ${(err as Error).message}`);
      return { status: 400 };
    }
    const answer = sub.answers.shift() ?? { status: 201 };
    this.received.push({ subscription: sub.id, headers: req.headers, vapid, plaintext, answered: answer.status });
    return answer;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** `vapid t=<JWT>, k=<P-256 public key>`: the claims once the ES256 signature checks out with k. */
export function verifyVapid(header: string): ReceivedPush['vapid'] {
  const m = header.match(/^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/);
  if (!m) throw new Error(`Authorization is not 'vapid t=…, k=…': ${header}`);
  const [, token, k] = m;
  const [h, p, s] = token.split('.');
  const jwtHeader = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as { alg: string; typ: string };
  if (jwtHeader.alg !== 'ES256') throw new Error(`VAPID JWT alg ${jwtHeader.alg}`);
  const raw = Buffer.from(k, 'base64url');
  const key = createPublicKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      x: raw.subarray(1, 33).toString('base64url'),
      y: raw.subarray(33).toString('base64url'),
    },
    format: 'jwk',
  });
  const ok = verify(
    'sha256',
    Buffer.from(`${h}.${p}`),
    { key, dsaEncoding: 'ieee-p1363' },
    Buffer.from(s, 'base64url'),
  );
  if (!ok) throw new Error('VAPID JWT signature does not verify with k');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as ReceivedPush['vapid']['claims'];
  return { publicKey: k, claims };
}
