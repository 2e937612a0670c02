/**
 * The follow graph is order-safe: the event's occurredAt decides, not its arrival. An edge keeps
 * the state of the latest event seen; an older event (an unfollow delivered after a later follow,
 * a replayed follow after its unfollow) changes nothing. Two events at the same instant resolve to
 * "not following" whatever their order, so every replica and every replay ends in the same state.
 */
export interface EdgeState {
  active: boolean;
  occurredAt: Date;
}

export interface FollowTransition {
  /** The state to store (undefined: keep the stored one). */
  next: EdgeState | undefined;
  /** Whether `active` changes (the author's follower count and the feed follow it). */
  changed: boolean;
}

export function applyFollowEvent(current: EdgeState | undefined, event: EdgeState): FollowTransition {
  if (current === undefined) return { next: event, changed: event.active };
  const newer = event.occurredAt.getTime() > current.occurredAt.getTime();
  const tieToUnfollow = event.occurredAt.getTime() === current.occurredAt.getTime() && !event.active && current.active;
  if (!newer && !tieToUnfollow) return { next: undefined, changed: false };
  return { next: event, changed: event.active !== current.active };
}
