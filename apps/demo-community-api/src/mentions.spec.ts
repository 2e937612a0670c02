import { parseHandles } from './mentions';

describe('parseHandles', () => {
  it('finds @handles, lowercased and de-duplicated, in order of first appearance', () => {
    expect(parseHandles('@Bob thanks, @ada and @bob! (@Grace_H) @x-y.')).toEqual(['bob', 'ada', 'grace_h', 'x-y']);
  });

  it('ignores email addresses and other @ inside words', () => {
    expect(parseHandles('mail ada@example.test or a.b@c, not me@@ada, but yes to @ada')).toEqual(['ada']);
  });

  it('finds nothing in plain text and stops a handle at 64 characters', () => {
    expect(parseHandles('no mentions here @ all')).toEqual([]);
    expect(parseHandles(`@${'a'.repeat(70)}`)).toEqual(['a'.repeat(64)]);
  });
});
