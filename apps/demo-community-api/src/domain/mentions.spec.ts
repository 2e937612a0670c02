import { excerpt, MAX_MENTIONS, mentionedUsers, parseHandles } from './mentions';

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

describe('mentionedUsers', () => {
  it('keeps resolved users in order of first mention, once each, never the author', () => {
    const resolved = new Map([
      ['bob', 'bob'],
      ['ada', 'ada'],
      ['gracehopper', 'grace'],
      ['grace', 'grace'],
    ]);
    expect(mentionedUsers(['bob', 'nobody', 'ada', 'gracehopper', 'grace', 'bob'], resolved, 'ada')).toEqual([
      'bob',
      'grace',
    ]);
  });

  it('stops at MAX_MENTIONS users', () => {
    const handles = Array.from({ length: MAX_MENTIONS + 5 }, (_, i) => `u${i}`);
    const users = mentionedUsers(handles, new Map(handles.map((h) => [h, h])), 'author');
    expect(users).toEqual(handles.slice(0, MAX_MENTIONS));
  });
});

describe('excerpt', () => {
  it('flattens whitespace and cuts long text with an ellipsis', () => {
    expect(excerpt('  one\n\ttwo   three ')).toBe('one two three');
    expect(excerpt('x'.repeat(10), 5)).toBe('xxxx…');
    expect(excerpt('x'.repeat(5), 5)).toBe('xxxxx');
  });
});
