import { applyFollowEvent } from './follow-state';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
const follow = (s: number) => ({ active: true, occurredAt: at(s) });
const unfollow = (s: number) => ({ active: false, occurredAt: at(s) });

describe('applyFollowEvent', () => {
  it('records a first follow as a change', () => {
    expect(applyFollowEvent(undefined, follow(1))).toEqual({ next: follow(1), changed: true });
  });
  it('records an unfollow that arrives before its follow, without counting a change', () => {
    expect(applyFollowEvent(undefined, unfollow(2))).toEqual({ next: unfollow(2), changed: false });
  });
  it('ignores the older follow that arrives after its unfollow', () => {
    expect(applyFollowEvent(unfollow(2), follow(1))).toEqual({ next: undefined, changed: false });
  });
  it('ignores a replayed follow (same instant) after a later unfollow, and a replay of the same event', () => {
    expect(applyFollowEvent(unfollow(3), follow(1))).toEqual({ next: undefined, changed: false });
    expect(applyFollowEvent(follow(1), follow(1))).toEqual({ next: undefined, changed: false });
  });
  it('applies a newer unfollow, then a newer re-follow', () => {
    expect(applyFollowEvent(follow(1), unfollow(2))).toEqual({ next: unfollow(2), changed: true });
    expect(applyFollowEvent(unfollow(2), follow(3))).toEqual({ next: follow(3), changed: true });
  });
  it('resolves a follow and an unfollow of the same instant to not following, in either order', () => {
    expect(applyFollowEvent(follow(5), unfollow(5))).toEqual({ next: unfollow(5), changed: true });
    expect(applyFollowEvent(unfollow(5), follow(5))).toEqual({ next: undefined, changed: false });
  });
  it('moves the timestamp on without a change when a newer event repeats the state', () => {
    expect(applyFollowEvent(follow(1), follow(4))).toEqual({ next: follow(4), changed: false });
  });
});
