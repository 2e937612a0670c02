import { FilterError, parseFilter, whereOf } from './filter';

describe('parseFilter', () => {
  it('keeps known non-empty keys and drops the rest', () => {
    expect(parseFilter({ queue: 'a.dlq', q: '', other: 'x', asOf: 12 })).toEqual({ queue: 'a.dlq', asOf: '12' });
  });

  it('passes a time on in the ISO form it was read as', () => {
    expect(parseFilter({ since: '2026-12-01T10:00:00+01:00' })).toEqual({ since: '2026-12-01T09:00:00.000Z' });
  });

  it.each([
    [{ state: 'gone' }, /filter.state must be one of/],
    [{ since: 'yesterday' }, /filter.since must be an ISO 8601 time/],
    [{ asOf: 'abc' }, /filter.asOf must be a message id/],
    [{ queue: 3 }, /filter.queue must be a string/],
    // Text PostgreSQL cannot hold or read as a time: 400, not a failed query.
    [{ q: 'a\u0000b' }, /filter.q holds a NUL character/],
    [{ queue: '\u0000' }, /filter.queue holds a NUL character/],
    [{ since: '+275760-09-13T00:00:00Z' }, /filter.since must be an ISO 8601 time/],
    [{ until: '-100000-01-01T00:00:00Z' }, /filter.until must be an ISO 8601 time/],
  ])('refuses %p with a reason', (raw, reason) => {
    expect(() => parseFilter(raw as never)).toThrow(FilterError);
    expect(() => parseFilter(raw as never)).toThrow(reason);
  });
});

describe('whereOf', () => {
  it('defaults to pending messages', () => {
    expect(whereOf({})).toEqual({ sql: 'm.state = $1::dlq_message_state', params: ['pending'] });
  });

  it('numbers parameters from the given position and escapes LIKE wildcards in free text', () => {
    const w = whereOf({ queue: 'a.dlq', q: '50%_off', asOf: '9' }, 3);
    expect(w.sql).toBe(
      "m.state = $3::dlq_message_state AND m.queue = $4 AND m.id <= $5::bigint AND (m.error_message ILIKE $6 OR m.message_id ILIKE $6 OR encode(m.body, 'escape') ILIKE $6)",
    );
    expect(w.params).toEqual(['pending', 'a.dlq', '9', '%50\\%\\_off%']);
  });
});
