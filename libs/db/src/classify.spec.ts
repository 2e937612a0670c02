import { classify } from '@community/messaging';
import { classifyPgError } from './classify';

const pgError = (code: string) => Object.assign(new Error(`pg ${code}`), { code });

describe('classifyPgError', () => {
  it.each([
    ['unique violation 23505', '23505', 'permanent'],
    ['invalid text representation 22P02', '22P02', 'permanent'],
    ['connection failure 08006', '08006', 'transient'],
    ['serialization failure 40001', '40001', 'transient'],
    ['deadlock 40P01', '40P01', 'transient'],
    ['too many connections 53300', '53300', 'transient'],
    ['admin shutdown 57P01', '57P01', 'transient'],
  ])('%s → %s', (_name, code, kind) => {
    expect(classifyPgError(pgError(code))).toBe(kind);
  });

  it('leaves undefined table 42P01 to the default (transient: a rolling deploy is about the moment)', () => {
    expect(classifyPgError(pgError('42P01'))).toBeUndefined();
    expect(classify(pgError('42P01'), [classifyPgError])).toBe('transient');
  });

  it('does not claim errors that carry no SQLSTATE', () => {
    expect(classifyPgError(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBeUndefined();
    expect(classifyPgError(new Error('no code'))).toBeUndefined();
    expect(classifyPgError(undefined)).toBeUndefined();
    expect(classifyPgError({ code: 23505 })).toBeUndefined();
  });

  it('makes the runtime dead-letter an integrity violation at once', () => {
    expect(classify(pgError('23505'))).toBe('transient');
    expect(classify(pgError('23505'), [classifyPgError])).toBe('permanent');
  });
});
