import { fingerprintOf, normaliseErrorMessage } from './fingerprint';

describe('normaliseErrorMessage', () => {
  it.each([
    ['user 4f1c2a9e-1111-4a2b-9c3d-0123456789ab not found', 'user <uuid> not found'],
    ['no address for alice@example.org', 'no address for <email>'],
    ['timeout after 3000 ms on attempt 4', 'timeout after <n> ms on attempt <n>'],
    ['comment c_42 missing', 'comment <id> missing'],
    ["field 'bodyText' is too long", "field '<v>' is too long"],
    ['row 0123456789abcdef locked at 2026-12-01T10:00:00.123Z', 'row <id> locked at <time>'],
  ])('%s → %s', (input, expected) => {
    expect(normaliseErrorMessage(input)).toBe(expected);
  });
});

describe('fingerprintOf', () => {
  const base = { errorClass: 'PermanentError', errorMessage: 'user 42 not found', handler: 'ingest', messageType: 'user.mentioned' };

  it('is the same for two occurrences that differ only in ids and numbers', () => {
    expect(fingerprintOf(base).fingerprint).toBe(fingerprintOf({ ...base, errorMessage: 'user 977 not found' }).fingerprint);
  });

  it.each([
    ['error class', { errorClass: 'TransientError' }],
    ['message text', { errorMessage: 'user 42 is banned' }],
    ['handler', { handler: 'other' }],
    ['message type', { messageType: 'comment.created' }],
  ])('differs when the %s differs', (_what, change) => {
    expect(fingerprintOf({ ...base, ...change }).fingerprint).not.toBe(fingerprintOf(base).fingerprint);
  });
});
