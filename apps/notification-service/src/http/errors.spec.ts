import { ERRORS } from './errors';

it('every HTTP error code is unique and carries a 4xx status', () => {
  const made = Object.values(ERRORS).map((make) => (make as (...a: string[]) => { code: string; statusCode: number })('x', 'y', 'z'));
  expect(new Set(made.map((e) => e.code)).size).toBe(made.length);
  for (const e of made) expect(e.statusCode).toBeGreaterThanOrEqual(400);
  for (const e of made) expect(e.statusCode).toBeLessThan(500);
});
