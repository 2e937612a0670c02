import { classify } from '@community/messaging';
import { parseRecountRequest, planRanges, recountRequest } from './requests';

describe('recount requests', () => {
  it('round-trips through the body and refuses anything else as permanent', () => {
    const req = recountRequest({ after: '', through: 'u-5' }, 'admin', 'corr-1', new Date('2026-12-01T00:00:00Z'));
    expect(parseRecountRequest(Buffer.from(JSON.stringify(req)))).toEqual(req);
    for (const bad of [
      'not json',
      JSON.stringify({ ...req, type: 'x' }),
      JSON.stringify({ ...req, data: { after: 'b', through: 'a', requestedBy: 'x' } }),
    ]) {
      let err: unknown;
      try {
        parseRecountRequest(Buffer.from(bad));
      } catch (e) {
        err = e;
      }
      expect(classify(err as Error)).toBe('permanent');
    }
  });

  it('plans ranges from the last id of each batch', () => {
    expect(planRanges(['c', 'f', 'h'])).toEqual([
      { after: '', through: 'c' },
      { after: 'c', through: 'f' },
      { after: 'f', through: 'h' },
    ]);
    expect(planRanges([])).toEqual([]);
  });
});
