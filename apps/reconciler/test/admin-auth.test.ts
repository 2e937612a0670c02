// Who may use the admin API: only an operator's admin token (EdDSA, a key in ADMIN_KEYS, for the
// reconciler). A user token is 403 with the reason, whatever scope it claims; every malformed,
// expired, foreign or unknown-key token is 401 (docs/CONTRACT.md "HTTP contract").
import { testOperators, tokenForms, type TestDatabase, type TokenFormKind } from '@community/testing';
import { createTestDatabase, JWT_SECRET, OPERATORS, startReconciler, type Reconciler } from './harness';

let db: TestDatabase;
let rc: Reconciler;

beforeAll(async () => {
  db = await createTestDatabase('rc_admin_auth');
  rc = await startReconciler(db, undefined);
});
afterAll(async () => {
  await rc?.close();
  await db?.drop();
});

const STATUS: Record<TokenFormKind, number> = {
  invalid: 401,
  owner: 403,
  'other-user': 403,
  'other-user-with-admin-scope': 403,
  operator: 200,
};

it.each(tokenForms({ secret: JWT_SECRET, service: 'reconciler', operators: OPERATORS, owner: 'u-owner' }))(
  'GET /v1/admin/jobs with %s (%s)',
  async (_who, kind, authorization) => {
    const res = await rc.svc.app.inject({
      method: 'GET',
      url: '/v1/admin/jobs',
      headers: authorization ? { authorization } : {},
    });
    expect(res.statusCode).toBe(STATUS[kind]);
    if (kind === 'operator') expect(res.json()).toHaveProperty('jobs');
    else
      expect(res.json()).toMatchObject({
        statusCode: STATUS[kind],
        code: expect.stringMatching(/^(RC_|FAST_JWT_)/),
        message: expect.any(String),
      });
    if (kind === 'other-user-with-admin-scope') {
      expect(res.json()).toMatchObject({
        code: 'RC_ADMIN_REQUIRED',
        message: expect.stringContaining("the 'admin' scope of a user token grants nothing"),
      });
    }
  },
);

it('an unknown kid is 401 RC_ADMIN_KEY_UNKNOWN and says which kid', async () => {
  const stranger = testOperators(['mallory']);
  const res = await rc.svc.app.inject({
    method: 'GET',
    url: '/v1/admin/jobs',
    headers: { authorization: `Bearer ${stranger.token('mallory', 'reconciler')}` },
  });
  expect(res.statusCode).toBe(401);
  expect(res.json()).toMatchObject({
    code: 'RC_ADMIN_KEY_UNKNOWN',
    message: expect.stringContaining("unknown key id 'mallory-test-1'"),
  });
});
