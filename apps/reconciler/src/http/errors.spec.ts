import { ERRORS } from './errors';

it('every HTTP error code is unique, RC_-prefixed and carries a 4xx status, or 503 for work this replica cannot do', () => {
  const made = Object.values(ERRORS).map((make) =>
    (make as (...a: unknown[]) => { code: string; statusCode: number })('x', 'y'),
  );
  expect(new Set(made.map((e) => e.code)).size).toBe(made.length);
  for (const e of made) {
    expect(e.code).toMatch(/^RC_[A-Z_]+$/);
    // 503 only says "not here, not now" (a replica without messaging); nothing else is a server fault.
    if (e.statusCode === 503) continue;
    expect(e.statusCode).toBeGreaterThanOrEqual(400);
    expect(e.statusCode).toBeLessThan(500);
  }
  expect(made.filter((e) => e.statusCode === 503).map((e) => e.code)).toEqual(['RC_REDRIVE_NO_MESSAGING']);
});

it("the DLQ console's errors are RC_DLQ_-coded client errors", () => {
  const samples = [
    ERRORS.DLQ_MESSAGE_NOT_FOUND('1'),
    ERRORS.DLQ_OPERATION_NOT_FOUND('2'),
    ERRORS.DLQ_INVALID_FILTER('x'),
    ERRORS.DLQ_INVALID_SELECTION('y'),
    ERRORS.DLQ_DISCARD_TOO_MANY(2000, 1000),
    ERRORS.DLQ_DISCARD_COUNT_CHANGED(5, 6),
  ];
  for (const e of samples) {
    expect(e.code).toMatch(/^RC_DLQ_[A-Z_]+$/);
    expect(e.statusCode).toBeGreaterThanOrEqual(400);
    expect(e.statusCode).toBeLessThan(500);
  }
  expect(samples.map((e) => e.statusCode)).toEqual([404, 404, 400, 400, 400, 409]);
});
