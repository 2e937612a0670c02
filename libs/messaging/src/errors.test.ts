import { ContractError } from '@community/contracts';
import { classify, HandlerTimeoutError, PermanentError, TransientError } from './errors';
import { routeFailure } from './consumer/failure';

describe('classify', () => {
  it.each([
    ['PermanentError', new PermanentError('missing reference'), 'permanent'],
    ['ContractError (invalid payload)', new ContractError('SCHEMA_VIOLATION', '/data/x', 'Expected string'), 'permanent'],
    ['TransientError', new TransientError('busy'), 'transient'],
    ['handler timeout', new HandlerTimeoutError(100), 'transient'],
    ['pg unique violation 23505', Object.assign(new Error('dup'), { code: '23505' }), 'permanent'],
    ['pg invalid text 22P02', Object.assign(new Error('bad'), { code: '22P02' }), 'permanent'],
    ['pg serialization failure 40001', Object.assign(new Error('retry'), { code: '40001' }), 'transient'],
    ['pg admin shutdown 57P01', Object.assign(new Error('bye'), { code: '57P01' }), 'transient'],
    ['pg undefined table 42P01 (rolling deploy)', Object.assign(new Error('no table'), { code: '42P01' }), 'transient'],
    ['SMTP 550', Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }), 'permanent'],
    ['SMTP 451', Object.assign(new Error('try later'), { responseCode: 451 }), 'transient'],
    ['network reset', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'transient'],
    ['a bug', new TypeError('x is undefined'), 'transient'],
  ])('%s → %s', (_name, err, kind) => {
    expect(classify(err)).toBe(kind);
  });
});

describe('routeFailure', () => {
  const tiers = [1000, 5000];
  it('sends transient failures through the tiers in order, then to the DLQ', () => {
    const err = new TransientError('busy');
    expect(routeFailure('q', tiers, 1, err)).toMatchObject({ destination: 'retry', queue: 'q.retry.1s' });
    expect(routeFailure('q', tiers, 2, err)).toMatchObject({ destination: 'retry', queue: 'q.retry.5s' });
    expect(routeFailure('q', tiers, 3, err)).toMatchObject({ destination: 'dlq', queue: 'q.dlq', kind: 'transient' });
  });
  it('sends permanent failures to the DLQ on the first attempt', () => {
    expect(routeFailure('q', tiers, 1, new PermanentError('no'))).toMatchObject({ destination: 'dlq', kind: 'permanent' });
  });
  it('goes straight to the DLQ when a queue has no tiers', () => {
    expect(routeFailure('q', [], 1, new TransientError('busy'))).toMatchObject({ destination: 'dlq' });
  });
});
