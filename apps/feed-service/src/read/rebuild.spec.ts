import { diffFeed } from './rebuild';

describe('diffFeed', () => {
  const e = (postId: string, at: number) => ({ postId, at });

  it('finds entries missing, extra, and with another score (both missing and extra)', () => {
    const expected = [e('c', 300), e('b', 200), e('a', 100)];
    const actual = [e('ghost', 250), e('b', 201), e('a', 100)];
    expect(diffFeed(expected, actual)).toEqual({
      missing: [e('c', 300), e('b', 200)],
      extra: [e('ghost', 250), e('b', 201)],
    });
  });

  it('is empty for the same entries in any order', () => {
    expect(diffFeed([e('a', 1), e('b', 2)], [e('b', 2), e('a', 1)])).toEqual({ missing: [], extra: [] });
  });

  it('leaves out entries at or after settledBefore on both sides (a fan-out in flight)', () => {
    expect(diffFeed([e('new', 500), e('a', 100)], [e('a', 100), e('other-new', 600)], 500)).toEqual({
      missing: [],
      extra: [],
    });
    expect(diffFeed([e('new', 499)], [], 500)).toEqual({ missing: [e('new', 499)], extra: [] });
  });
});
