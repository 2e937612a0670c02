import { DLQ_ERRORS } from './errors';

describe('DLQ_ERRORS', () => {
  it('are 4xx with RC_DLQ_ codes', () => {
    const samples = [
      DLQ_ERRORS.DLQ_MESSAGE_NOT_FOUND('1'),
      DLQ_ERRORS.DLQ_OPERATION_NOT_FOUND('2'),
      DLQ_ERRORS.DLQ_INVALID_FILTER('x'),
      DLQ_ERRORS.DLQ_INVALID_SELECTION('y'),
      DLQ_ERRORS.DLQ_DISCARD_TOO_MANY(2000, 1000),
      DLQ_ERRORS.DLQ_DISCARD_COUNT_CHANGED(5, 6),
    ];
    for (const e of samples) {
      expect(e.code).toMatch(/^RC_DLQ_[A-Z_]+$/);
      expect(e.statusCode).toBeGreaterThanOrEqual(400);
      expect(e.statusCode).toBeLessThan(500);
    }
    expect(new Set(samples.map((e) => e.code)).size).toBe(samples.length);
  });
});
