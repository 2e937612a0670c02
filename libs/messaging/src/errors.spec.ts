import { classify, HandlerTimeoutError, PermanentError, TransientError, type ErrorClassifier } from './errors';

describe('classify', () => {
  it.each([
    ['PermanentError', new PermanentError('missing reference'), 'permanent'],
    [
      'an error of another library flagged permanent (by property)',
      Object.assign(new Error('invalid payload'), { permanent: true }),
      'permanent',
    ],
    ['TransientError', new TransientError('busy'), 'transient'],
    ['handler timeout', new HandlerTimeoutError(100), 'transient'],
    ['network reset', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'transient'],
    ['a bug', new TypeError('x is undefined'), 'transient'],
    // The runtime knows no driver: without a classifier these are unknown, hence transient.
    ['pg unique violation without a classifier', Object.assign(new Error('dup'), { code: '23505' }), 'transient'],
    ['SMTP 550 without a classifier', Object.assign(new Error('no such user'), { responseCode: 550 }), 'transient'],
  ])('%s → %s', (_name, err, kind) => {
    expect(classify(err)).toBe(kind);
  });

  const byCode: ErrorClassifier = (err) => ((err as { code?: unknown }).code === 'BAD' ? 'permanent' : undefined);
  const everything: ErrorClassifier = () => 'transient';

  it('asks the classifiers in order; the first answer wins', () => {
    const bad = Object.assign(new Error('bad'), { code: 'BAD' });
    expect(classify(bad, [byCode, everything])).toBe('permanent');
    expect(classify(bad, [everything, byCode])).toBe('transient');
  });

  it('lets the error’s own flag win over any classifier', () => {
    const flagged = Object.assign(new Error('bad'), { code: 'BAD', transient: true });
    expect(classify(flagged, [byCode])).toBe('transient');
  });

  it('falls back to transient when no classifier knows the error', () => {
    expect(classify(new Error('?'), [byCode])).toBe('transient');
  });
});
