import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createVerifier } from 'fast-jwt';
import { DEV_EMAIL_SERVICE_VERIFY_KEY, DEV_JWT_SECRET, DEV_UNSUBSCRIBE_TOKEN_SECRET } from '@community/config';
import { DEFAULT_PREFERENCES } from '@community/contracts';
import { eventually } from '@community/testing';
import { messageIdFor } from '../src/message-id';
import { UnsubscribeTokens } from '../src/unsubscribe/token';
import {
  createInfra,
  notificationCreated,
  startService,
  testConfig,
  userUpserted,
  type Infra,
  type StartedService,
} from './support/harness';
import { TestSmtp } from './support/smtp';

// A stand-in for notification-service's preferences API as docs/NOTIFICATIONS.md describes it
// (GET → { preferences: {...} }; PUT { preferences: { <type>: { inApp?, email? } } } changes only
// what it names, anything else is a 400): records requests and checks email-service's service token.
interface Recorded {
  method: string;
  url: string;
  authorized: boolean;
  body: unknown;
}
const requests: Recorded[] = [];
// The user had moved reactions to immediate: a digest opt-out must not touch them.
const storedPreferences = { ...DEFAULT_PREFERENCES, reaction: { inApp: true, email: 'immediate' } };
let prefsUp = true;
const prefsServer = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    requests.push({
      method: req.method ?? '',
      url: req.url ?? '',
      authorized: validServiceToken(req.headers.authorization),
      body: raw ? JSON.parse(raw) : undefined,
    });
    if (!prefsUp) return res.writeHead(503).end('down');
    const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
    if (req.method === 'PUT' && (!body || Object.keys(body).join() !== 'preferences'))
      return res.writeHead(400).end('{"message":"expected only preferences"}');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ preferences: storedPreferences }));
  });
});

/** EdDSA with email-service's key, for notification-service, scope preferences:opt-out, unexpired (as notification-service checks it). */
const verifyServiceToken = createVerifier({
  key: DEV_EMAIL_SERVICE_VERIFY_KEY,
  algorithms: ['EdDSA'],
  allowedIss: 'email-service',
  allowedAud: 'notification-service',
  requiredClaims: ['exp'],
});
function validServiceToken(header: string | undefined): boolean {
  try {
    const claims = verifyServiceToken((header ?? '').replace(/^Bearer /, '')) as { scope?: string };
    return String(claims.scope).split(' ').includes('preferences:opt-out');
  } catch {
    return false;
  }
}

let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;
const idFor = (key: string) => messageIdFor('immediate', key, 'community.local');
const emailsFor = (key: string) => smtp.received.filter((m) => m.messageId === idFor(key));

beforeAll(async () => {
  await new Promise<void>((r) => prefsServer.listen(0, '127.0.0.1', r));
  infra = await createInfra('email_unsub');
  smtp = await new TestSmtp().start();
  const prefsUrl = `http://127.0.0.1:${(prefsServer.address() as AddressInfo).port}`;
  // JWT_SECRET only to verify version 1 links (the last test): email-service signs nothing with it.
  s = await startService(testConfig(infra, smtp, { NOTIFICATION_SERVICE_URL: prefsUrl, JWT_SECRET: DEV_JWT_SECRET }));
  await s.publish(userUpserted('alice', 'alice@example.test', 'Alice'));
  await eventually('alice projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 1);
});

afterAll(async () => {
  await s?.svc.stop();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
  await new Promise((r) => prefsServer.close(r));
});

async function unsubscribeLinkFromAnEmail(type: 'mention' | 'reply' | 'reaction'): Promise<string> {
  const event = notificationCreated({ userId: 'alice', type });
  await s.publish(event);
  const [mail] = await eventually('an email', () =>
    emailsFor(event.data.idempotencyKey).length ? emailsFor(event.data.idempotencyKey) : undefined,
  );
  const url = new URL(String(mail.headers.get('list-unsubscribe')).slice(1, -1));
  return `${url.pathname}${url.search}`;
}

it('shows a confirmation page on GET and changes nothing', async () => {
  const link = await unsubscribeLinkFromAnEmail('mention');
  const page = await s.svc.app.inject({ method: 'GET', url: link });
  expect(page.statusCode).toBe(200);
  expect(page.headers['content-type']).toContain('text/html');
  expect(page.body).toContain('Stop receiving <strong>mention emails</strong>?');
  expect(page.body).toContain('<form method="post"');
  expect((await s.svc.pool.query('SELECT 1 FROM email_suppressions')).rowCount).toBe(0);
  expect(requests.filter((r) => r.method === 'PUT')).toHaveLength(0);
});

it('one-click POST records the opt-out, updates preferences in notification-service, and stops emails already decided', async () => {
  const decidedEarlier = notificationCreated({
    userId: 'alice',
    type: 'mention',
    occurredAt: new Date(Date.now() - 1_000),
  });
  const link = await unsubscribeLinkFromAnEmail('mention');
  const res = await s.svc.app.inject({
    method: 'POST',
    url: link,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'List-Unsubscribe=One-Click',
  });
  expect(res.statusCode).toBe(200);
  expect(res.body).toContain('You will no longer receive <strong>mention emails</strong>');

  const put = requests.find((r) => r.method === 'PUT');
  expect(put).toMatchObject({ url: '/v1/users/alice/preferences', authorized: true });
  // Only mention's email channel changes; in-app and the other types stay as the user left them.
  expect(put?.body).toEqual({ preferences: { mention: { email: 'off' } } });
  const { rows } = await s.svc.pool.query(
    `SELECT scope, synced_at IS NOT NULL AS synced FROM email_suppressions WHERE user_id = 'alice'`,
  );
  expect(rows).toEqual([{ scope: 'mention', synced: true }]);

  // A mention decided before the opt-out (notification-service still said "immediate") is not sent;
  // one decided well after it follows notification-service again (e.g. the user re-subscribed there).
  const decidedLater = notificationCreated({
    userId: 'alice',
    type: 'mention',
    occurredAt: new Date(Date.now() + 5 * 60_000),
  });
  await s.publish(decidedEarlier);
  await s.publish(decidedLater);
  await eventually('the later one sent', () => emailsFor(decidedLater.data.idempotencyKey).length === 1);
  await eventually(
    'the earlier one suppressed',
    async () => (await s.metric('email_decisions_total', { decision: 'suppressed' })) === 1,
  );
  expect(emailsFor(decidedEarlier.data.idempotencyKey)).toHaveLength(0);
  // Other types are unaffected.
  await unsubscribeLinkFromAnEmail('reply');
});

it('keeps the opt-out when notification-service is down and pushes it later from the scheduler', async () => {
  prefsUp = false;
  const link = await unsubscribeLinkFromAnEmail('reply');
  const res = await s.svc.app.inject({
    method: 'POST',
    url: link,
    headers: { 'content-type': 'multipart/form-data; boundary=x' },
    payload: '--x\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--x--\r\n',
  });
  expect(res.statusCode).toBe(200);
  const unsynced = await s.svc.pool.query(
    `SELECT last_sync_error FROM email_suppressions WHERE user_id = 'alice' AND scope = 'reply' AND synced_at IS NULL`,
  );
  expect(unsynced.rows[0].last_sync_error).toContain('HTTP 503');

  prefsUp = true;
  await s.svc.ticker.tick(new Date(Date.now() + 60_000));
  const synced = await s.svc.pool.query(
    `SELECT 1 FROM email_suppressions WHERE user_id = 'alice' AND scope = 'reply' AND synced_at IS NOT NULL`,
  );
  expect(synced.rowCount).toBe(1);
});

it('a digest opt-out turns off every type currently sent in the digest', async () => {
  const token = new UnsubscribeTokens(DEV_UNSUBSCRIBE_TOKEN_SECRET).sign({ userId: 'alice', scope: 'digest' });
  requests.length = 0;
  const res = await s.svc.app.inject({ method: 'POST', url: `/v1/unsubscribe?token=${encodeURIComponent(token)}` });
  expect(res.statusCode).toBe(200);
  expect(requests.map((r) => r.method)).toEqual(['GET', 'PUT']);
  expect(requests[1].body).toEqual({ preferences: { comment: { email: 'off' }, follow: { email: 'off' } } });
});

it('refuses a forged or tampered token with a 400 and the standard error shape', async () => {
  const token = new UnsubscribeTokens(DEV_UNSUBSCRIBE_TOKEN_SECRET).sign({ userId: 'alice', scope: 'follow' });
  const [payload, mac] = token.split('.');
  const forged = `${Buffer.from(JSON.stringify({ v: 1, u: 'bob', s: 'mention' })).toString('base64url')}.${mac}`;
  for (const bad of [forged, `${payload}.AAAA`, 'garbage']) {
    const res = await s.svc.app.inject({ method: 'POST', url: `/v1/unsubscribe?token=${encodeURIComponent(bad)}` });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      statusCode: 400,
      error: 'Bad Request',
      message: 'invalid or tampered unsubscribe token',
    });
  }
  expect((await s.svc.app.inject({ method: 'GET', url: '/v1/unsubscribe' })).statusCode).toBe(400);
  expect((await s.svc.pool.query(`SELECT 1 FROM email_suppressions WHERE user_id = 'bob'`)).rowCount).toBe(0);
});

it("an email's link expires after UNSUBSCRIBE_TOKEN_TTL_DAYS: 410 with the reason, a page for a browser, and nothing changes", async () => {
  // The link in a real email carries its expiry, 60 days on (the default). (Alice turned mentions
  // and replies off above.)
  const link = await unsubscribeLinkFromAnEmail('reaction');
  const token = new URL(link, 'http://x').searchParams.get('token') ?? '';
  const claims = JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()) as { v: number; e: number };
  expect(claims.v).toBe(2);
  expect(claims.e * 1000 - Date.now()).toBeGreaterThan(59 * 86_400_000);
  expect(claims.e * 1000 - Date.now()).toBeLessThanOrEqual(60 * 86_400_000);

  // A link from an email composed 61 days ago.
  const sentLongAgo = new UnsubscribeTokens(DEV_UNSUBSCRIBE_TOKEN_SECRET, {
    now: () => new Date(Date.now() - 61 * 86_400_000),
  }).sign({ userId: 'carol', scope: 'follow' });
  const url = `/v1/unsubscribe?token=${encodeURIComponent(sentLongAgo)}`;
  const oneClick = await s.svc.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'List-Unsubscribe=One-Click',
  });
  expect(oneClick.statusCode).toBe(410);
  expect(oneClick.json()).toMatchObject({
    statusCode: 410,
    code: 'ES_EXPIRED_UNSUBSCRIBE_TOKEN',
    error: 'Gone',
    message: expect.stringContaining('expired'),
  });
  const browser = await s.svc.app.inject({
    method: 'GET',
    url,
    headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
  });
  expect(browser.statusCode).toBe(410);
  expect(browser.headers['content-type']).toContain('text/html');
  expect(browser.body).toContain('This unsubscribe link has expired');
  expect(browser.body).toContain('notification settings');
  expect((await s.svc.pool.query(`SELECT 1 FROM email_suppressions WHERE user_id = 'carol'`)).rowCount).toBe(0);

  // A link from before links expired (version 1, keyed from JWT_SECRET) is expired too, and says so.
  const key = createHmac('sha256', DEV_JWT_SECRET).update('email-service:unsubscribe:v1').digest();
  const payload = Buffer.from(JSON.stringify({ v: 1, u: 'carol', s: 'follow' })).toString('base64url');
  const v1 = `${payload}.${createHmac('sha256', key).update(payload).digest('base64url')}`;
  const old = await s.svc.app.inject({ method: 'POST', url: `/v1/unsubscribe?token=${encodeURIComponent(v1)}` });
  expect(old.json()).toMatchObject({ statusCode: 410, code: 'ES_EXPIRED_UNSUBSCRIBE_TOKEN' });
});
