import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import { eventually } from '@community/testing';
import { formatPush, serialisePayload } from '../src/domain/payload';
import { notificationCreated, PUBLIC_BASE_URL, startHarness, type Harness } from './support/harness';

/**
 * The push page and its service worker in headless Chromium: the page served by push-service on a
 * real port registers the worker; a push is delivered to that worker through the DevTools protocol
 * (a real PushManager subscription needs the browser vendor's push service, unreachable here), with
 * the payload exactly as push-service builds it; the notification the worker shows is read back
 * from the page (`registration.getNotifications()`).
 */
let h: Harness;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
let base: string;
const registrations = new Map<string, { registrationId: string; scopeURL: string; isDeleted: boolean }>();
const cspViolations: string[] = [];

/**
 * The browser's globals the evaluated functions use (the test's TypeScript has no DOM library);
 * each function runs in the page, so it casts `globalThis` itself.
 */
interface InPage {
  navigator: {
    serviceWorker: {
      ready: Promise<{
        active: { scriptURL: string } | null;
        getNotifications(): Promise<{ title: string; body: string; tag: string; data: unknown }[]>;
      }>;
    };
  };
  document: { body: { dataset: Record<string, string | undefined> } };
}

interface Shown {
  title: string;
  body: string;
  tag: string;
  data: { url?: string; notificationId?: string } | null;
}

beforeAll(async () => {
  h = await startHarness('browser');
  base = await h.svc.app.listen({ host: '127.0.0.1', port: 0 });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    // As root (the CI containers) Chromium's sandbox cannot start; the DLQ console's test does the same.
    args: ['--no-sandbox'],
  });
  context = await browser.newContext();
  // The worker's showNotification needs the permission the page asks a user for.
  await context.grantPermissions(['notifications'], { origin: base });
  page = await context.newPage();
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
  cdp = await context.newCDPSession(page);
  cdp.on('ServiceWorker.workerRegistrationUpdated', ({ registrations: updated }) => {
    for (const r of updated) registrations.set(r.registrationId, r);
  });
  await cdp.send('ServiceWorker.enable');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

/** The id of the live registration of /push/ (the page registered it). */
async function pushRegistration(): Promise<string> {
  let id = '';
  await eventually('the service worker of /push/ registered', async () => {
    const live = [...registrations.values()].find((r) => !r.isDeleted && r.scopeURL === `${base}/push/`);
    id = live?.registrationId ?? '';
    return id !== '';
  });
  return id;
}

/** The notifications the worker's registration shows now, by tag. */
const shownNotifications = () =>
  page.evaluate(async (): Promise<Shown[]> => {
    const registration = await (globalThis as unknown as InPage).navigator.serviceWorker.ready;
    return (await registration.getNotifications()).map((n) => ({
      title: n.title,
      body: n.body,
      tag: n.tag,
      data: n.data as Shown['data'],
    }));
  });

/**
 * Delivers `data` to the worker and waits until it has shown it: the worker posts to the page once
 * showNotification resolved, a new line under "Shown here". Only then are the notifications read:
 * polling getNotifications() while the worker was showing one lost that one now and then (shown,
 * never listed), most likely Chromium's clean-up of stored notifications not displayed yet.
 */
async function push(data: string): Promise<void> {
  const before = await page.locator('#shown li').count();
  await cdp.send('ServiceWorker.deliverPushMessage', {
    origin: base,
    registrationId: await pushRegistration(),
    data,
  });
  await page.locator('#shown li').nth(before).waitFor();
}

async function shownWithTag(tag: string): Promise<Shown> {
  const found = (await shownNotifications()).filter((n) => n.tag === tag);
  expect(found).toHaveLength(1);
  return found[0];
}

it('serves the page, which registers its worker and is ready to subscribe', async () => {
  const response = await page.goto(`${base}/push/`);
  expect(response?.status()).toBe(200);
  expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
  await page.waitForSelector('body[data-ready="true"]');
  expect(await page.textContent('#status')).toBe('Ready: give your user id and token, then subscribe.');
  expect(await pushRegistration()).not.toBe('');
  // The worker controls nothing yet the page needs; it is active for the scope.
  expect(
    await page.evaluate(
      async () => (await (globalThis as unknown as InPage).navigator.serviceWorker.ready).active?.scriptURL,
    ),
  ).toBe(`${base}/push/sw.js`);
  expect(cspViolations).toEqual([]);
});

it('shows a push as push-service builds it: title, body, tag, and the link a click opens', async () => {
  const event = notificationCreated({ userId: 'ann', type: 'mention', excerpt: 'What do you think, @ann?' });
  const payload = formatPush(event.data, PUBLIC_BASE_URL);
  await push(serialisePayload(payload));

  const shown = await shownWithTag(payload.tag);
  expect(shown).toEqual({
    title: 'Someone mentioned you in a comment',
    body: 'What do you think, @ann?',
    tag: payload.tag,
    data: {
      url: `${PUBLIC_BASE_URL}/notifications/${event.data.notificationId}`,
      notificationId: event.data.notificationId,
    },
  });
  // The worker told the open page what it showed.
  await page.waitForSelector(`#shown li:has-text("Someone mentioned you in a comment: What do you think, @ann?")`);
});

it('shows HTML in a body as text, in the notification and on the page', async () => {
  const html = '<img src=x onerror="document.body.dataset.owned=1"><b>bold</b> & "quoted"';
  const event = notificationCreated({ userId: 'ann', type: 'reply', excerpt: html });
  const payload = formatPush(event.data, PUBLIC_BASE_URL);
  const data = serialisePayload(payload);
  expect(data).not.toContain('<');

  await push(data);
  const shown = await shownWithTag(payload.tag);
  expect(shown.title).toBe('Someone replied to your comment');
  expect(shown.body).toBe(html);
  const item = page.locator('#shown li', { hasText: 'Someone replied to your comment' });
  await item.waitFor();
  expect(await item.textContent()).toBe(`Someone replied to your comment: ${html}`);
  expect(await item.locator('img, b').count()).toBe(0);
  expect(await page.evaluate(() => (globalThis as unknown as InPage).document.body.dataset.owned)).toBeUndefined();
  expect(cspViolations).toEqual([]);
});

it('replaces the shown notification of the same tag (the next member of a group)', async () => {
  const first = notificationCreated({ userId: 'ann', type: 'reaction', groupKey: 'reaction:post:p-1', excerpt: 'one' });
  const second = notificationCreated({
    userId: 'ann',
    type: 'reaction',
    groupKey: 'reaction:post:p-1',
    excerpt: 'two',
  });
  const a = formatPush(first.data, PUBLIC_BASE_URL);
  const b = formatPush(second.data, PUBLIC_BASE_URL);
  expect(b.tag).toBe(a.tag);
  await push(serialisePayload(a));
  await shownWithTag(a.tag);
  await push(serialisePayload(b));
  expect(await shownWithTag(a.tag)).toMatchObject({
    body: 'two',
    data: { notificationId: second.data.notificationId },
  });
});

it('shows a payload that is not JSON as text under the title "Community"', async () => {
  await push('<b>plain</b> text');
  expect((await shownNotifications()).filter((n) => n.title === 'Community')).toEqual([
    { title: 'Community', body: '<b>plain</b> text', tag: '', data: { notificationId: undefined } },
  ]);
});
