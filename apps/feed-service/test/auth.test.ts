import { randomUUID } from 'node:crypto';
import { tokenForms, type TokenFormKind } from '@community/testing';
import { JWT_SECRET, OPERATORS, startHarness, type Harness } from './harness';

/** Authorization matrix of the feed API over every token form (libs/testing `tokenForms`): 401 without a valid token, 403 for another user's feed, 200 for the owner and an operator. */
let h: Harness;
const owner = `u-${randomUUID()}`;

beforeAll(async () => {
  h = await startHarness('auth', { amqp: false });
}, 60_000);
afterAll(async () => h?.close());

/** The owner and an operator read the feed; another user is 403, even with an admin scope in an HS256 token. */
const STATUS: Record<TokenFormKind, number> = {
  invalid: 401,
  owner: 200,
  'other-user': 403,
  'other-user-with-admin-scope': 403,
  operator: 200,
};
const callers = tokenForms({ secret: JWT_SECRET, service: 'feed-service', operators: OPERATORS, owner }).map(
  ([who, kind, authorization]) => [who, STATUS[kind], authorization] as const,
);

it.each(callers)('GET /v1/users/:userId/feed with %s → %s', async (_who, status, authorization) => {
  const res = await h.service.app.inject({
    method: 'GET',
    url: `/v1/users/${owner}/feed`,
    headers: authorization ? { authorization } : {},
  });
  expect(res.statusCode).toBe(status);
  const body = res.json();
  if (status === 200) expect(body).toEqual({ items: [], nextCursor: null });
  else
    expect(body).toMatchObject({
      statusCode: status,
      code: expect.stringMatching(/^(FS_|FAST_JWT_)/),
      error: expect.any(String),
      message: expect.any(String),
    });
  if (status === 403)
    expect(body).toMatchObject({
      code: 'FS_FORBIDDEN_USER',
      message: expect.stringContaining(`may not access the feed of user '${owner}'`),
    });
});

it.each([
  ['a cursor it did not issue', `?cursor=${'x'.repeat(12)}`, 'FS_INVALID_CURSOR'],
  ['a limit over 100', '?limit=101', 'FST_ERR_VALIDATION'],
])('answers 400 to %s', async (_what, qs, code) => {
  const res = await h.service.app.inject({
    method: 'GET',
    url: `/v1/users/${owner}/feed${qs}`,
    headers: { authorization: `Bearer ${h.token(owner)}` },
  });
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({ statusCode: 400, code });
});
