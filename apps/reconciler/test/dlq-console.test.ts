import amqplib from 'amqplib';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ADMIN_TOKEN_ISSUER } from '@community/service';
import { craftToken, eventually } from '@community/testing';
import { OPERATORS, orderId, startDlqHarness, WORK, type DlqHarness } from './dlq-harness';

/**
 * The console page end to end in headless Chromium: messages really dead-lettered by a consumer,
 * the page served by the app, an operator pasting a token, finding the cause, reading a message,
 * dry-running a replay of the group, confirming it and watching the progress reach done; the
 * consumer on the original queue then processed every message.
 */
let h: DlqHarness;
let browser: Browser;
let page: Page;
let base: string;
const cspViolations: string[] = [];

beforeAll(async () => {
  h = await startDlqHarness('console');
  base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });
  page = await browser.newPage();
  // The page runs under its CSP (no 'unsafe-inline'): anything it blocked is reported here.
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

it('shows the cause, a message beside its error, dry-runs and replays the group with progress to done', async () => {
  const ids = [orderId(), orderId(), orderId()];
  await h.deadLetter(
    ids.map((id, i) => ({ id, type: 'order.placed', reason: `warehouse ${7 + i} rejected order ${id}` })),
  );

  const response = await page.goto(`${base}/console`);
  expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
  await page.fill('#token', h.token('erin', 'admin'));
  await page.click('#login-form button');
  await page.waitForSelector('#who:has-text("signed in as erin")');

  // The summary row of the DLQ and the group with its count.
  const summaryRow = page.locator(`#summary tr[data-queue="${WORK}.dlq"]`);
  await summaryRow.waitFor();
  expect(await summaryRow.locator('td').nth(1).textContent()).toBe('3');
  const groupRow = page.locator('#groups tbody tr', { hasText: 'warehouse <n> rejected order <uuid>' });
  await groupRow.waitFor();
  expect(await groupRow.locator('td').first().textContent()).toBe('3');

  // Filter by the group: the list shows its three messages; open one.
  await groupRow.click();
  await page.waitForSelector('#total[data-total="3"]');
  await page.locator('#messages tbody tr').first().click();
  await page.waitForSelector('#detail:not([hidden])');
  const payload = await page.textContent('#detail-body');
  const error = await page.textContent('#detail-error');
  expect(JSON.parse(payload ?? '')).toMatchObject({ type: 'order.placed' });
  expect(error).toMatch(/PermanentError \(permanent\)\nwarehouse \d rejected order/);
  expect(await page.textContent('#detail-meta')).toContain(`original queue ${WORK}`);

  // Dry run: the count, and nothing changes.
  h.poisoned.clear();
  await page.fill('#rate', '20');
  await page.click('#replay-dry');
  await page.waitForSelector('#preview-text[data-matched="3"]');
  expect(await page.textContent('#preview-text')).toContain('would act on 3 message(s)');
  expect(await page.textContent('#preview-queues')).toContain(`3 → ${WORK}`);
  for (const id of ids) expect(await h.processed(WORK, id)).toEqual({ processed: 0, deliveries: 1 });

  // Confirm: the progress reaches done.
  await page.click('#confirm');
  await page.waitForSelector('#progress-text[data-state="done"]', { timeout: 15_000 });
  expect(await page.textContent('#progress-text')).toMatch(/done — 3\/3 \(3 ok, 0 failed, 0 skipped\)/);
  expect(await page.getAttribute('#progress-bar', 'value')).toBe('3');

  // The consumer on the original queue processed each message once; the page shows none left.
  await eventually('replayed orders processed', async () => {
    for (const id of ids) if ((await h.processed(WORK, id)).processed !== 1) return false;
    return true;
  });
  await page.waitForSelector('#total[data-total="0"]');
  const { rows } = await h.pool.query(`SELECT DISTINCT o.requested_by FROM dlq_operations o WHERE o.action = 'replay'`);
  expect(rows).toEqual([{ requested_by: 'erin' }]);
});

it('discards one message from its detail view, with the same preview, and keeps it visible as discarded', async () => {
  const id = orderId();
  await h.deadLetter([{ id, type: 'order.placed', reason: `fraud check failed for order ${id}` }]);
  await page.click('#refresh');
  const groupRow = page.locator('#groups tbody tr', { hasText: 'fraud check failed for order <uuid>' });
  await groupRow.waitFor();
  await groupRow.click();
  await page.waitForSelector('#total[data-total="1"]');
  await page.locator('#messages tbody tr').first().click();
  await page.waitForSelector(`#detail-id:has-text("${id}")`);
  await page.click('#detail-discard');
  await page.waitForSelector('#preview-text[data-matched="1"]');
  expect(await page.textContent('#preview-text')).toContain('Dry run: discard would act on 1 message(s)');
  const before = await h.pool.query(`SELECT state FROM dlq_messages WHERE message_id = $1`, [id]);
  expect(before.rows).toEqual([{ state: 'pending' }]);

  await page.click('#confirm');
  await page.waitForSelector('#progress-text[data-state="done"]:has-text("(discard)")');
  expect(await page.textContent('#progress-text')).toMatch(/\(discard\): done — 1\/1 \(1 ok/);
  const after = await h.pool.query(
    `SELECT m.state, o.requested_by FROM dlq_messages m JOIN dlq_operation_items i ON i.message_id = m.id JOIN dlq_operations o ON o.id = i.operation_id WHERE m.message_id = $1`,
    [id],
  );
  expect(after.rows).toEqual([{ state: 'discarded', requested_by: 'erin' }]);
  await page.selectOption('#filters select[name=state]', 'discarded');
  await page.click('#filters button[type=submit]');
  await page.waitForSelector(`#messages tbody tr:has-text("fraud check failed for order ${id}")`);

  // ...and undoes it: the detail says who discarded it and until when, "Restore" brings it back.
  await page.locator(`#messages tbody tr:has-text("fraud check failed for order ${id}")`).click();
  await page.waitForSelector('#detail-restore:not([hidden])');
  expect(await page.textContent('#detail-meta')).toMatch(/discarded by erin .*, restorable until /);
  await page.click('#detail-restore');
  await page.waitForSelector('#preview-text[data-matched="1"]');
  expect(await page.textContent('#preview-text')).toContain('Dry run: restore would act on 1 message(s)');
  await page.click('#confirm');
  await page.waitForSelector('#progress-text[data-state="done"]:has-text("(restore)")');
  expect((await h.pool.query(`SELECT state FROM dlq_messages WHERE message_id = $1`, [id])).rows).toEqual([
    { state: 'pending' },
  ]);
});

it('ran under its Content-Security-Policy with nothing blocked', () => {
  expect(cspViolations).toEqual([]);
});

it('asks for the token again when the API refuses it', async () => {
  const fresh = await browser.newPage();
  await fresh.goto(`${base}/console`);
  await fresh.fill('#token', h.token('mallory'));
  await fresh.click('#login-form button');
  await fresh.waitForSelector('#login:not([hidden])');
  await eventually('the refusal is shown', async () =>
    /admin routes need an operator's admin token/.test((await fresh.textContent('#login-error')) ?? ''),
  );
  await fresh.close();
});

// Short-lived tokens for the renewal tests: under two minutes, so the page asks for a renewal ahead
// of time, and far longer than signing in and a dry run take on a loaded machine. The tests expire
// them by moving the reconciler's clock past them (h.clock), never by waiting.
const SHORT_TOKEN_MS = 90_000;
afterEach(() => h.clock.reset());

/** A page signed in with `token` (the header says who the reconciler verified it as). */
async function signedIn(token: string, operator: string): Promise<Page> {
  const p = await browser.newPage();
  await p.goto(`${base}/console`);
  await p.fill('#token', token);
  await p.click('#login-form button');
  await p.waitForSelector(`#who:has-text("signed in as ${operator}")`);
  return p;
}

it('groups bodies that are not JSON as one cause, whatever the parser said, and warns that replaying them fails again', async () => {
  // Three bodies broken in three ways: the parser's text differs (a token and a snippet, the end,
  // a position after a property); the consumer refuses each with the contracts lib's ContractError.
  const bodies = ['{"id":}', '{"id":"a"', '{"id":"b" "type":1}'];
  const ids = bodies.map(() => orderId());
  const conn = await amqplib.connect(h.vhost.url);
  try {
    const ch = await conn.createConfirmChannel();
    bodies.forEach((body, i) => ch.sendToQueue(WORK, Buffer.from(body), { messageId: ids[i], persistent: true }));
    await ch.waitForConfirms();
  } finally {
    await conn.close();
  }
  await eventually(
    'the three dead letters stored',
    async () => (await h.pool.query(`SELECT 1 FROM dlq_messages WHERE message_id = ANY($1)`, [ids])).rowCount === 3,
  );
  const messages = await h.pool.query(`SELECT DISTINCT error_message FROM dlq_messages WHERE message_id = ANY($1)`, [
    ids,
  ]);
  expect(messages.rowCount).toBe(3);

  const p = await signedIn(h.token('erin', 'admin'), 'erin');
  const groupRow = p.locator('#groups tbody tr', {
    hasText: 'ContractError: Body is not valid JSON (<JSON syntax error>)',
  });
  await groupRow.waitFor();
  expect(await groupRow.count()).toBe(1);
  expect(await groupRow.locator('td').first().textContent()).toBe('3');

  await groupRow.click();
  await p.waitForSelector('#total[data-total="3"]');
  await p.click('#replay-dry');
  await p.waitForSelector('#preview-text[data-matched="3"]');
  const warning = p.locator('#preview-warnings li[data-permanence="fails-again"]');
  await warning.waitFor();
  expect(await warning.textContent()).toMatch(
    /^Will fail again: 3 message\(s\) failed with ContractError: the body is not valid JSON/,
  );
  await p.click('#cancel');
  await p.close();
});

it('renews an expired token in place: the preview stays, the refused confirm goes through, and only the same operator may renew', async () => {
  const ids = [orderId(), orderId()];
  await h.deadLetter(ids.map((id) => ({ id, type: 'order.placed', reason: `courier refused parcel ${id}` })));
  const short = OPERATORS.token('erin', 'reconciler', SHORT_TOKEN_MS);
  const p = await signedIn(short, 'erin');
  // Less than two minutes left: the page asks for a new token ahead of time.
  await p.waitForSelector('#renewal:not([hidden]) #renewal-reason:has-text("expires in")');

  const groupRow = p.locator('#groups tbody tr', { hasText: 'courier refused parcel <uuid>' });
  await groupRow.click();
  await p.waitForSelector('#total[data-total="2"]');
  await p.click('#replay-dry');
  await p.waitForSelector('#preview-text[data-matched="2"]');
  const group = await p.inputValue('#filters input[name=group]');
  expect(group).toMatch(/^[0-9a-f]{16}$/);

  h.clock.advance(SHORT_TOKEN_MS + 1000);
  const refused = await fetch(`${base}/v1/admin/dlq`, { headers: { authorization: `Bearer ${short}` } });
  expect(refused.status).toBe(401); // the short token has expired
  h.poisoned.clear();
  // Confirm with the expired token: refused, and the page waits for a new one instead of starting over.
  await p.click('#confirm');
  await p.waitForSelector('#renewal-reason:has-text("refused the token")');
  expect(await p.isVisible('#preview')).toBe(true);
  expect(await p.isVisible('#login')).toBe(false);

  // An expired token cannot renew it.
  const erin = OPERATORS.key('erin');
  const now = Math.floor(Date.now() / 1000);
  const expired = craftToken(
    { alg: 'EdDSA', typ: 'JWT', kid: erin.kid },
    { iss: ADMIN_TOKEN_ISSUER, aud: 'reconciler', iat: now - 900, exp: now - 60 },
    { key: erin.privateKeyPem },
  );
  await p.fill('#renew-token', expired);
  await p.click('#renew-form button');
  await p.waitForSelector('#renew-error:has-text("Not renewed")');
  expect(await p.textContent('#renew-error')).toMatch(/expired/i);

  // Nor can another operator's valid token: a renewal keeps who is signed in.
  await p.fill('#renew-token', h.token('frank', 'admin'));
  await p.click('#renew-form button');
  await p.waitForSelector('#renew-error:has-text("this token is for frank")');
  expect(await p.isVisible('#renewal')).toBe(true);

  // A new token of erin's: the refused confirm is sent again, the replay runs to done.
  await p.fill('#renew-token', h.token('erin', 'admin'));
  await p.click('#renew-form button');
  await p.waitForSelector('#renewal', { state: 'hidden' });
  await p.waitForSelector('#progress-text[data-state="done"]', { timeout: 15_000 });
  expect(await p.textContent('#progress-text')).toMatch(/done — 2\/2 \(2 ok/);
  expect(await p.textContent('#who')).toBe('signed in as erin');
  expect(await p.inputValue('#filters input[name=group]')).toBe(group);
  const { rows } = await h.pool.query(
    `SELECT DISTINCT o.requested_by FROM dlq_operations o JOIN dlq_operation_items i ON i.operation_id = o.id JOIN dlq_messages m ON m.id = i.message_id WHERE m.message_id = ANY($1) AND o.action = 'replay'`,
    [ids],
  );
  expect(rows).toEqual([{ requested_by: 'erin' }]);
  await eventually('replayed parcels processed', async () => {
    for (const id of ids) if ((await h.processed(WORK, id)).processed !== 1) return false;
    return true;
  });
  await p.close();
});

it("drops a request waiting for a renewal when the operator signs out: it is never sent with the next operator's token", async () => {
  const id = orderId();
  await h.deadLetter([{ id, type: 'order.placed', reason: `address unknown for parcel ${id}` }]);
  const short = OPERATORS.token('erin', 'reconciler', SHORT_TOKEN_MS);
  const p = await signedIn(short, 'erin');
  await p.locator('#groups tbody tr', { hasText: 'address unknown for parcel <uuid>' }).click();
  await p.waitForSelector('#total[data-total="1"]');
  await p.click('#replay-dry');
  await p.waitForSelector('#preview-text[data-matched="1"]');
  h.clock.advance(SHORT_TOKEN_MS + 1000);
  const refused = await fetch(`${base}/v1/admin/dlq`, { headers: { authorization: `Bearer ${short}` } });
  expect(refused.status).toBe(401); // the short token has expired
  await p.click('#confirm');
  await p.waitForSelector('#renewal-reason:has-text("refused the token")');

  // erin leaves instead of renewing; frank signs in on the same page and renews his own token.
  await p.click('#logout');
  await p.fill('#token', h.token('frank', 'admin'));
  await p.click('#login-form button');
  await p.waitForSelector('#who:has-text("signed in as frank")');
  await p.click('#renew');
  await p.fill('#renew-token', h.token('frank', 'admin'));
  await p.click('#renew-form button');
  await p.waitForSelector('#renewal', { state: 'hidden' });
  await p.click('#refresh');
  await p.waitForSelector('#summary tbody tr');

  const { rows } = await h.pool.query(
    `SELECT o.requested_by FROM dlq_operations o JOIN dlq_operation_items i ON i.operation_id = o.id JOIN dlq_messages m ON m.id = i.message_id WHERE m.message_id = $1`,
    [id],
  );
  expect(rows).toEqual([]);
  expect((await h.pool.query(`SELECT state FROM dlq_messages WHERE message_id = $1`, [id])).rows).toEqual([
    { state: 'pending' },
  ]);
  await p.close();
});
