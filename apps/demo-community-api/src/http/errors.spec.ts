import { ERRORS } from './errors';

describe('API error catalogue', () => {
  // A crash is answered 500 INTERNAL_ERROR by the shared error handler (libs/observability), not from here.
  it('has unique UPPER_SNAKE codes and 4xx statuses', () => {
    const made = Object.values(ERRORS).map((make) =>
      (make as (...a: string[]) => { code: string; statusCode: number })('x', 'y', 'z'),
    );
    expect(new Set(made.map((e) => e.code)).size).toBe(made.length);
    for (const e of made) {
      expect(e.code).toMatch(/^[A-Z][A-Z_]+$/);
      expect(e.statusCode).toBeGreaterThanOrEqual(400);
      expect(e.statusCode).toBeLessThan(500);
    }
  });

  it('words each message from its arguments', () => {
    expect(ERRORS.PARENT_COMMENT_NOT_FOUND('c-1', 'p-1')).toMatchObject({
      statusCode: 404,
      code: 'PARENT_COMMENT_NOT_FOUND',
      message: 'Parent comment "c-1" not found on post "p-1"',
    });
  });
});
