import { ERRORS } from './errors';

it('every HTTP error code is unique, ES_-prefixed and carries a 4xx status', () => {
  const made = Object.values(ERRORS).map((make) => make());
  expect(new Set(made.map((e) => e.code)).size).toBe(made.length);
  for (const e of made) {
    expect(e.code).toMatch(/^ES_[A-Z_]+$/);
    expect(e.statusCode).toBeGreaterThanOrEqual(400);
    expect(e.statusCode).toBeLessThan(500);
  }
});
