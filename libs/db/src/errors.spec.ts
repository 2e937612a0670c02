import { isUniqueViolation, sqlState } from './errors';

const pgError = (code: string, constraint?: string) =>
  Object.assign(new Error('from the server'), { code, constraint });

describe('sqlState', () => {
  it('reads a PostgreSQL SQLSTATE', () => {
    expect(sqlState(pgError('57P01'))).toBe('57P01');
    expect(sqlState(pgError('23505'))).toBe('23505');
  });

  it('is undefined for socket errors and anything that is not an error from the server', () => {
    expect(sqlState(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBeUndefined();
    expect(sqlState(new Error('plain'))).toBeUndefined();
    expect(sqlState(undefined)).toBeUndefined();
    expect(sqlState('23505')).toBeUndefined();
  });
});

describe('isUniqueViolation', () => {
  it('matches SQLSTATE 23505, optionally on one constraint', () => {
    expect(isUniqueViolation(pgError('23505', 'users_email_key'))).toBe(true);
    expect(isUniqueViolation(pgError('23505', 'users_email_key'), 'users_email_key')).toBe(true);
    expect(isUniqueViolation(pgError('23505', 'users_email_key'), 'other_key')).toBe(false);
    expect(isUniqueViolation(pgError('23503'))).toBe(false);
    expect(isUniqueViolation(new Error('duplicate key value violates unique constraint'))).toBe(false);
  });
});
