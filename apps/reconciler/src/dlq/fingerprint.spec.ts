import { validate } from '@community/contracts';
import { FINGERPRINT_INPUT_CHARS, fingerprintOf, JSON_SYNTAX_ERROR, normaliseErrorMessage } from './fingerprint';

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
  const base = {
    errorClass: 'PermanentError',
    errorMessage: 'user 42 not found',
    handler: 'ingest',
    messageType: 'user.mentioned',
  };

  it('is the same for two occurrences that differ only in ids and numbers', () => {
    expect(fingerprintOf(base).fingerprint).toBe(
      fingerprintOf({ ...base, errorMessage: 'user 977 not found' }).fingerprint,
    );
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
  const head =
    'upstream said: ' + '4f1c2a9e-1111-4a2b-9c3d-0123456789ab '.repeat(26).padEnd(FINGERPRINT_INPUT_CHARS - 15, ' ');

  it('text past FINGERPRINT_INPUT_CHARS does not change the fingerprint', () => {
    const a = fingerprintOf({ ...base, errorMessage: head + ' first tail 42 alice@example.org' });
    const b = fingerprintOf({ ...base, errorMessage: head + 'a completely different tail' });
    expect(head).toHaveLength(FINGERPRINT_INPUT_CHARS);
    expect(a.normalized.length).toBeLessThan(500);
    expect(a.fingerprint).toBe(b.fingerprint);
    // ...while a difference inside the bound still does.
    expect(fingerprintOf({ ...base, errorMessage: 'upstream SAID: ' + head.slice(15) }).fingerprint).not.toBe(
      a.fingerprint,
    );
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

describe('JSON parse errors are one cause, whatever the parser says about where the bytes broke', () => {
  // Bodies that break JSON in each of the ways V8 words differently: a token and a snippet, the end,
  // a position after a property, an array, a string, an escape, a number, trailing bytes.
  const bodies = [
    '{"a":}',
    'hello',
    '',
    '{"a":1',
    '[1,2',
    '{a:1}',
    '"abc',
    '{"a":1}x',
    '-',
    '1e',
    '{"a" 1}',
    '"\\x"',
    '"\\u12"',
    '"a\u0001"',
    `{"${'k'.repeat(40)}":${'v'.repeat(40)}}`,
    "'single'",
    '{"text":"line one\nline two" oops}',
    '{"user":"4f1c2a9e-1111-4a2b-9c3d-0123456789ab",}',
  ];
  const messages = bodies.map((body) => {
    const result = validate(Buffer.from(body));
    if (result.ok) throw new Error(`${JSON.stringify(body)} parsed`);
    return result.error.message;
  });
  const base = { errorClass: 'ContractError', handler: 'ingest', messageType: null };

  it("the contract lib's messages differ per body (positions, snippets)", () => {
    expect(new Set(messages).size).toBe(messages.length);
  });

  it('every one normalises to the same text and so one fingerprint', () => {
    expect(new Set(messages.map(normaliseErrorMessage))).toEqual(
      new Set([`Body is not valid JSON (${JSON_SYNTAX_ERROR})`]),
    );
    expect(new Set(messages.map((errorMessage) => fingerprintOf({ ...base, errorMessage }).fingerprint)).size).toBe(1);
  });

  it.each([
    ['Node 18', 'Unexpected token } in JSON at position 17'],
    ['Node 18, end', 'Unexpected end of JSON input'],
    ['Node 22+, line and column', `Expected ',' or '}' after property value in JSON at position 9 (line 1 column 10)`],
    ['Node 22+, a quote as the token', `Unexpected token ''', "'abc" is not valid JSON`],
    ['a snippet cut at both ends', 'Unexpected token \'b\', ..."aaaaaaaa":bbbbbbbbbb"... is not valid JSON'],
  ])('the %s wording is the same cause too', (_what, parser) => {
    expect(normaliseErrorMessage(`Body is not valid JSON (${parser})`)).toBe(
      `Body is not valid JSON (${JSON_SYNTAX_ERROR})`,
    );
  });

  it('a JSON parse error is still another cause than a schema violation of the same type', () => {
    const schema = validate(Buffer.from(JSON.stringify({ type: 'user.mentioned' })));
    expect(schema.ok).toBe(false);
    const other = schema.ok ? '' : schema.error.message;
    expect(fingerprintOf({ ...base, errorMessage: other }).fingerprint).not.toBe(
      fingerprintOf({ ...base, errorMessage: messages[0] }).fingerprint,
    );
  });

  it('text around the parser message still tells causes apart', () => {
    expect(normaliseErrorMessage('config file x.json: Unexpected end of JSON input')).toBe(
      `config file x.json: ${JSON_SYNTAX_ERROR}`,
    );
  });
});
