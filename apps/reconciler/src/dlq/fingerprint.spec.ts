import { FINGERPRINT_INPUT_CHARS, fingerprintOf, normaliseErrorMessage } from './fingerprint';

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

describe('the normalised input is bounded (the rules are quadratic on long runs)', () => {
  const base = { errorClass: 'Error', handler: 'ingest', messageType: 'user.mentioned' };
  // Uuids normalise to much shorter placeholders, so without the bound the tail would reach the
  // normalised text (cut at 500) and change the fingerprint.
  const head = 'upstream said: ' + '4f1c2a9e-1111-4a2b-9c3d-0123456789ab '.repeat(26).padEnd(FINGERPRINT_INPUT_CHARS - 15, ' ');

  it('text past FINGERPRINT_INPUT_CHARS does not change the fingerprint', () => {
    const a = fingerprintOf({ ...base, errorMessage: head + ' first tail 42 alice@example.org' });
    const b = fingerprintOf({ ...base, errorMessage: head + 'a completely different tail' });
    expect(head).toHaveLength(FINGERPRINT_INPUT_CHARS);
    expect(a.normalized.length).toBeLessThan(500);
    expect(a.fingerprint).toBe(b.fingerprint);
    // ...while a difference inside the bound still does.
    expect(fingerprintOf({ ...base, errorMessage: 'upstream SAID: ' + head.slice(15) }).fingerprint).not.toBe(a.fingerprint);
  });

  it.each([
    ['one long word (e-mail rule)', 'a'.repeat(1 << 20)],
    ['letters and digits (id rule)', 'a1'.repeat(1 << 19)],
    ['dashes', '-'.repeat(1 << 20)],
  ])('a pathological 1 MB message (%s) is normalised from its first FINGERPRINT_INPUT_CHARS only', (_what, text) => {
    // Unbounded, each of these runs for minutes (16 k characters took 0.3 s); the assertion is the
    // bound itself: the result is what the first FINGERPRINT_INPUT_CHARS characters give.
    expect(normaliseErrorMessage(text)).toBe(normaliseErrorMessage(text.slice(0, FINGERPRINT_INPUT_CHARS)));
  });
});
