import { ERRORS } from './errors';

it('every HTTP error code is unique, PS_-prefixed and carries a 4xx status', () => {
  const made = Object.values(ERRORS).map((make) =>
    (make as (...a: unknown[]) => { code: string; statusCode: number })('x', 1, 2),
  );
  expect(new Set(made.map((e) => e.code)).size).toBe(made.length);
  for (const e of made) {
    expect(e.code).toMatch(/^PS_[A-Z_]+$/);
    expect(e.statusCode).toBeGreaterThanOrEqual(400);
    expect(e.statusCode).toBeLessThan(500);
  }
});
