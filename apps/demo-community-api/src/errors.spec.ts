import { API_ERRORS, ApiError, type ApiErrorCode } from './errors';

describe('API error catalogue', () => {
  const codes = Object.keys(API_ERRORS) as ApiErrorCode[];

  it('has unique codes that are UPPER_SNAKE and 4xx statuses', () => {
    expect(new Set(codes.map((c) => c.toLowerCase())).size).toBe(codes.length);
    for (const code of codes) {
      expect(code).toMatch(/^[A-Z][A-Z_]+$/);
      expect(API_ERRORS[code].statusCode).toBeGreaterThanOrEqual(400);
      expect(API_ERRORS[code].statusCode).toBeLessThan(500);
    }
  });

  it('fills every placeholder of a message', () => {
    const err = new ApiError('PARENT_COMMENT_NOT_FOUND', 'c-1', 'p-1');
    expect(err).toMatchObject({ statusCode: 404, code: 'PARENT_COMMENT_NOT_FOUND', message: 'Parent comment "c-1" not found on post "p-1"' });
  });
});
