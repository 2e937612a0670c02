import { createHmac, randomUUID } from 'node:crypto';
import { JWT_SECRET, startHarness, type Harness } from './harness';

/** Authorization matrix of the feed API: 401 without a valid token, 403 for another user's feed, 200 for the owner and an admin. */
let h: Harness;
const owner = `u-${randomUUID()}`;

beforeAll(async () => {
  h = await startHarness('auth', { amqp: false });
}, 60_000);
afterAll(async () => h?.close());

const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
function craft(payload: object, { alg = 'HS256', secret = JWT_SECRET } = {}): string {
  const head = `${b64({ alg, typ: 'JWT' })}.${b64(payload)}`;
  if (alg === 'none') return `${head}.`;
  const hash = alg === 'HS512' ? 'sha512' : 'sha256';
  return `${head}.${createHmac(hash, secret).update(head).digest('base64url')}`;
}
const now = () => Math.floor(Date.now() / 1000);

const callers: Array<[string, number, string | undefined]> = [
  ['no Authorization header', 401, undefined],
  ['a malformed header', 401, 'Token abc'],
  ['a garbage token', 401, 'Bearer not.a.jwt'],
  ['a token signed with another secret', 401, `Bearer ${craft({ sub: owner }, { secret: 'someone-elses-secret-0123456789' })}`],
  ['an expired token', 401, `Bearer ${craft({ sub: owner, exp: now() - 60 })}`],
  ['an unsigned token (alg none)', 401, `Bearer ${craft({ sub: owner, scope: 'admin' }, { alg: 'none' })}`],
  ['a token signed with HS512', 401, `Bearer ${craft({ sub: owner }, { alg: 'HS512' })}`],
  ['a token without sub', 401, `Bearer ${craft({ scope: 'admin' })}`],
  ['another user', 403, `Bearer ${craft({ sub: 'u-intruder', scope: 'read write' })}`],
  ['the owner', 200, `Bearer ${craft({ sub: owner, exp: now() + 600 })}`],
  ['an admin', 200, `Bearer ${craft({ sub: 'u-ops', scope: 'read admin' })}`],
];

it.each(callers)('GET /v1/users/:userId/feed with %s → %s', async (_who, status, authorization) => {
  const res = await h.service.app.inject({ method: 'GET', url: `/v1/users/${owner}/feed`, headers: authorization ? { authorization } : {} });
  expect(res.statusCode).toBe(status);
  const body = res.json();
  if (status === 200) expect(body).toEqual({ items: [], nextCursor: null });
  else expect(body).toMatchObject({ statusCode: status, code: expect.stringMatching(/^(FS_|FAST_JWT_|FST_JWT_)/), error: expect.any(String), message: expect.any(String) });
  if (status === 403) expect(body).toMatchObject({ code: 'FS_FORBIDDEN_USER', message: expect.stringContaining(`may not access the feed of user '${owner}'`) });
});

it.each([
  ['a cursor it did not issue', `?cursor=${'x'.repeat(12)}`, 'FS_INVALID_CURSOR'],
  ['a limit over 100', '?limit=101', 'FST_ERR_VALIDATION'],
])('answers 400 to %s', async (_what, qs, code) => {
  const res = await h.service.app.inject({ method: 'GET', url: `/v1/users/${owner}/feed${qs}`, headers: { authorization: `Bearer ${h.token(owner)}` } });
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({ statusCode: 400, code });
});
