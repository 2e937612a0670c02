import { ERRORS } from './errors';

describe('API error catalogue', () => {
  it('has unique UPPER_SNAKE codes and 4xx statuses, but the generic INTERNAL_ERROR', () => {
    const made = Object.values(ERRORS).map((make) => (make as (...a: string[]) => { code: string; statusCode: number })('x', 'y', 'z'));
    expect(new Set(made.map((e) => e.code)).size).toBe(made.length);
    expect(ERRORS.INTERNAL_ERROR()).toMatchObject({ statusCode: 500, code: 'INTERNAL_ERROR' });
    for (const e of made.filter((m) => m.code !== 'INTERNAL_ERROR')) {
      expect(e.code).toMatch(/^[A-Z][A-Z_]+$/);
      expect(e.statusCode).toBeGreaterThanOrEqual(400);
      expect(e.statusCode).toBeLessThan(500);
    }
  });

  it('words each message from its arguments', () => {
    expect(ERRORS.PARENT_COMMENT_NOT_FOUND('c-1', 'p-1')).toMatchObject({ statusCode: 404, code: 'PARENT_COMMENT_NOT_FOUND', message: 'Parent comment "c-1" not found on post "p-1"' });
  });
});
