import { beginStatement, type IsolationLevel } from './transaction';

describe('beginStatement', () => {
  it('is a bare BEGIN by default', () => {
    expect(beginStatement()).toBe('BEGIN');
    expect(beginStatement({ synchronousCommit: true, readOnly: false })).toBe('BEGIN');
  });

  it('names the isolation level and read-only mode in the BEGIN itself', () => {
    expect(beginStatement({ isolation: 'read committed' })).toBe('BEGIN ISOLATION LEVEL READ COMMITTED');
    expect(beginStatement({ isolation: 'repeatable read', readOnly: true })).toBe(
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
    expect(beginStatement({ isolation: 'serializable' })).toBe('BEGIN ISOLATION LEVEL SERIALIZABLE');
    expect(beginStatement({ readOnly: true })).toBe('BEGIN READ ONLY');
  });

  it('turns synchronous commit off for this transaction only, in the same round trip', () => {
    expect(beginStatement({ synchronousCommit: false })).toBe('BEGIN; SET LOCAL synchronous_commit TO off');
  });

  it('refuses an isolation level it does not know rather than sending it to the server', () => {
    expect(() => beginStatement({ isolation: 'snapshot; DROP TABLE x' as IsolationLevel })).toThrow(RangeError);
  });
});

describe('beginStatement with a statement timeout', () => {
  it('sets it for this transaction only, in the same round trip, in whole milliseconds', () => {
    expect(beginStatement({ statementTimeoutMs: 1500 })).toBe('BEGIN; SET LOCAL statement_timeout = 1500');
    expect(beginStatement({ statementTimeoutMs: 0.2 })).toBe('BEGIN; SET LOCAL statement_timeout = 1');
  });

  it('refuses a timeout that would mean "none" or is not a number', () => {
    for (const ms of [0, -5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => beginStatement({ statementTimeoutMs: ms })).toThrow(RangeError);
  });
});
