// Admin routes given ids Postgres cannot store as text (found by the fuzz suite, e2e/fuzz.test.ts):
// each is refused by the route's schema with a 400 and a reason, not answered 500 by a failed query.
import { bearer, createTestDatabase, startReconciler, type Reconciler } from './harness';
import type { TestDatabase } from '@community/testing';

let db: TestDatabase;
let rc: Reconciler;

beforeAll(async () => {
  db = await createTestDatabase('rc_admin_input');
  rc = await startReconciler(db, undefined);
});
afterAll(async () => {
  await rc?.close();
  await db?.drop();
});

const NUL = 'a\u0000b';

it.each([
  ['POST', '/v1/admin/recount', { userId: NUL }],
  ['POST', '/v1/admin/feeds/rebuild', { userId: NUL, dryRun: true }],
  ['GET', `/v1/admin/why?userId=${encodeURIComponent(NUL)}&eventId=e1`, undefined],
  ['GET', `/v1/admin/why?userId=u1&eventId=${encodeURIComponent(NUL)}`, undefined],
  ['GET', `/v1/admin/why?userId=u1&commentId=${encodeURIComponent(NUL)}`, undefined],
  ['GET', `/v1/admin/why?userId=u1&idempotencyKey=${encodeURIComponent(NUL)}`, undefined],
] as const)('%s %s with a NUL in an id: 400 with the reason', async (method, url, payload) => {
  const res = await rc.svc.app.inject({ method, url, headers: bearer(rc.token()), payload: payload as never });
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({ error: 'Bad Request', message: expect.stringMatching(/pattern/) });
});

it('still takes an ordinary id', async () => {
  const res = await rc.svc.app.inject({
    method: 'POST',
    url: '/v1/admin/recount',
    headers: bearer(rc.token()),
    payload: { userId: 'u1' },
  });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toMatchObject({ mode: 'inline', checked: 0 });
});
