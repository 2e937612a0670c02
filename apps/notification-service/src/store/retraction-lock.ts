/**
 * The advisory lock that orders retractions against creations (docs/NOTIFICATIONS.md "Retraction").
 * Every ingest batch takes it SHARED before its counter locks (claimAndLockInboxes), a retraction
 * takes it EXCLUSIVE before anything else. Without it a creation and a retraction committing side
 * by side would each miss the other (the creation checks the tombstones before the retraction's
 * commit, the retraction looks for rows before the creation's commit) and the notification would
 * survive. One key, not one per subject: a batch of 250 rows names ~750 subjects, which would fill
 * PostgreSQL's shared lock table, and retractions are rare and short (one small transaction), so
 * the price is that ingest waits the few milliseconds a retraction holds it.
 */
export const RETRACTION_LOCK_KEY = 7_146_913_251_001n;
