import { ERRORS } from './errors';

// The one 5xx of the catalogue: a replica holding its maximum of streams answers 503 with
// Retry-After, like DEPENDENCY_UNAVAILABLE: not the request's fault, and another replica may serve it.
const SERVER_SIDE = new Set(['NS_STREAMS_FULL']);

it('every HTTP error code is unique, NS_-prefixed and carries a 4xx status (a full replica: 503)', () => {
  const made = Object.values(ERRORS).map((make) =>
    (make as (...a: unknown[]) => { code: string; statusCode: number })('x', 1, 2),
  );
  expect(new Set(made.map((e) => e.code)).size).toBe(made.length);
  for (const e of made) {
    expect(e.code).toMatch(/^NS_[A-Z_]+$/);
    if (SERVER_SIDE.has(e.code)) {
      expect(e.statusCode).toBe(503);
      continue;
    }
    expect(e.statusCode).toBeGreaterThanOrEqual(400);
    expect(e.statusCode).toBeLessThan(500);
  }
});
