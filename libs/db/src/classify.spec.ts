import { classify } from '@community/messaging';
import { classifyPgError, pgUnavailable } from './classify';

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

describe('pgUnavailable', () => {
  it.each([
    ['connection failure 08006', pgError('08006')],
    ['connection does not exist 08003', pgError('08003')],
    ['admin shutdown 57P01 (pg_terminate_backend)', pgError('57P01')],
    ['crash shutdown 57P02', pgError('57P02')],
    ['cannot connect now 57P03', pgError('57P03')],
    ['too many connections 53300', pgError('53300')],
    ['a socket closed under the client', new Error('Connection terminated unexpectedly')],
    ['a pool that could not connect in time', new Error('timeout exceeded when trying to connect')],
    ['a connect timeout', new Error('Connection terminated due to connection timeout')],
    ['refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })],
    ['reset', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
  ])('%s → database', (_name, err) => {
    expect(pgUnavailable(err)).toBe('database');
  });

  it.each([
    ['unique violation 23505', pgError('23505')],
    ['statement timeout / cancel 57014 (our deadline, not an outage)', pgError('57014')],
    ['deadlock 40P01', pgError('40P01')],
    ['a programming error', new TypeError('x is not a function')],
    ['a message that only contains the words', new Error('user said: Connection terminated unexpectedly')],
    ['not an error', 'Connection terminated unexpectedly'],
  ])('%s → undefined', (_name, err) => {
    expect(pgUnavailable(err)).toBeUndefined();
  });
});
