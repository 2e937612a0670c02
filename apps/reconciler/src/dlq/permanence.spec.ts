import { validate } from '@community/contracts';
import { MessageTooLargeError } from '@community/messaging';
import { permanenceOf, replayWarnings } from './permanence';

const notJson = (() => {
  const r = validate(Buffer.from('{"a":}'));
  if (r.ok) throw new Error('parsed');
  return r.error.message;
})();
const notUtf8 = (() => {
  const r = validate(Buffer.from([0xff, 0xfe]));
  if (r.ok) throw new Error('parsed');
  return r.error.message;
})();
const unknownType = (() => {
  const r = validate(Buffer.from(JSON.stringify({ type: 'no.such.type', version: 1 })));
  if (r.ok) throw new Error('parsed');
  return r.error.message;
})();

describe('permanenceOf', () => {
  it.each([
    ['a body that is not JSON', 'ContractError', notJson, 'fails-again'],
    ['a body that is not UTF-8', 'ContractError', notUtf8, 'fails-again'],
    [
      'a body over the limit',
      'MessageTooLargeError',
      new MessageTooLargeError(2_000_000, 1_000_000).message,
      'fails-again',
    ],
    ['an unknown type (a consumer deploy can fix it)', 'ContractError', unknownType, 'likely-fails-again'],
    ['another permanent error', 'PermanentError', 'user 42 not found after the grace period', 'likely-fails-again'],
  ])('%s: %s', (_what, errorClass, errorMessage, expected) => {
    expect(permanenceOf({ errorClass, errorMessage })).toBe(expected);
  });
});

describe('replayWarnings', () => {
  it('merges per class and certainty, the surest first, and names the count', () => {
    const warnings = replayWarnings([
      { errorClass: 'PermanentError', errorMessage: 'user 1 not found', count: 7 },
      { errorClass: 'ContractError', errorMessage: unknownType, count: 2 },
      { errorClass: 'ContractError', errorMessage: notJson, count: 3 },
      { errorClass: 'ContractError', errorMessage: notUtf8, count: 1 },
    ]);
    expect(warnings.map((w) => [w.permanence, w.errorClass, w.count])).toEqual([
      ['fails-again', 'ContractError', 4],
      ['likely-fails-again', 'PermanentError', 7],
      ['likely-fails-again', 'ContractError', 2],
    ]);
    expect(warnings[0].message).toMatch(
      /^4 message\(s\) failed with ContractError: the body is not valid JSON, .* will fail again/,
    );
    expect(warnings[2].message).toContain('unless a consumer that accepts them');
  });

  it('says nothing when no selected dead letter was refused as permanent', () => {
    expect(replayWarnings([])).toEqual([]);
  });
});
