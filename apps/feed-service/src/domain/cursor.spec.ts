import { compareKeys, decodeCursor, encodeCursor, isAfter } from './cursor';
import { mergePage } from './merge';

describe('cursor', () => {
  it('round-trips and refuses what it did not issue', () => {
    const key = { at: 1_780_000_000_123, postId: 'p-1' };
    expect(decodeCursor(encodeCursor(key))).toEqual(key);
    for (const bad of [
      '',
      'abc',
      Buffer.from('[1]').toString('base64url'),
      Buffer.from('[-1,"x"]').toString('base64url'),
      Buffer.from('[1,""]').toString('base64url'),
    ]) {
      expect(decodeCursor(bad)).toBeUndefined();
    }
  });
  it('orders newest first, ties by post id descending in code point order', () => {
    const keys = [
      { at: 1, postId: 'a' },
      { at: 2, postId: 'a' },
      { at: 2, postId: 'b' },
      { at: 2, postId: 'B' },
    ];
    expect([...keys].sort(compareKeys).map((k) => `${k.at}${k.postId}`)).toEqual(['2b', '2a', '2B', '1a']);
    expect(isAfter({ at: 2, postId: 'a' }, { at: 2, postId: 'b' })).toBe(true);
    expect(isAfter({ at: 2, postId: 'b' }, { at: 2, postId: 'b' })).toBe(false);
    expect(isAfter({ at: 3, postId: 'a' }, { at: 2, postId: 'b' })).toBe(false);
  });
});

describe('mergePage', () => {
  const k = (at: number, postId: string) => ({ at, postId });
  it('merges sources into one page after the cursor, without duplicates', () => {
    const pushed = [k(9, 'p9'), k(7, 'p7'), k(5, 'p5')];
    const large = [k(8, 'L8'), k(7, 'p7'), k(3, 'L3')];
    expect(mergePage([pushed, large], undefined, 4).map((i) => i.postId)).toEqual(['p9', 'L8', 'p7', 'p5']);
    expect(mergePage([pushed, large], k(7, 'p7'), 4).map((i) => i.postId)).toEqual(['p5', 'L3']);
  });
});
