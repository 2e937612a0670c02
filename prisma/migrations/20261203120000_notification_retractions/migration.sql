-- Retraction (docs/NOTIFICATIONS.md "Retraction"): comment.deleted, post.deleted, reaction.removed
-- and an account deletion withdraw the notifications they name, whichever arrives first.

-- What can withdraw each notification: `comment:{id}`, `post:{id}`, `reaction:{id}`, `user:{actorId}`.
-- GIN: a retraction finds its rows with `subjects && ARRAY[subject]`; the default fastupdate pending
-- list keeps the insert path's cost low (rows are written in batches, looked up rarely).
ALTER TABLE "notification_items" ADD COLUMN "subjects" TEXT[] NOT NULL DEFAULT '{}';
-- Set when a retraction withdrew the row (in_app is cleared with it, so lists and counters skip it).
-- The row stays: its business and slot keys keep a redelivered creation from notifying again.
ALTER TABLE "notification_items" ADD COLUMN "withdrawn_at" TIMESTAMPTZ(3);
CREATE INDEX "notification_items_subjects_idx" ON "notification_items" USING GIN ("subjects");

-- The tombstones: one row per retracted subject, never purged, so a creation that arrives after its
-- retraction (another queue, a retry tier, a DLQ replay weeks later) is withdrawn on arrival.
CREATE TABLE "notification_retractions" (
    "subject" TEXT NOT NULL,
    -- The retraction event (its type and id), for `why` and the logs.
    "source_type" TEXT NOT NULL,
    "source_event_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "notification_retractions_pkey" PRIMARY KEY ("subject")
);

-- Owned by notification-service, the only writer and reader (docs/DATABASE.md "Who owns each table").
GRANT CREATE ON SCHEMA public TO community_notification_service;
ALTER TABLE notification_retractions OWNER TO community_notification_service;
REVOKE CREATE ON SCHEMA public FROM community_notification_service;
GRANT SELECT ON notification_retractions TO community_reconciler;
