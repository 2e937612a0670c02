-- notification-service emits notification.created itself, after the batch commit, without an
-- outbox row (docs/NOTIFICATIONS.md "Emission"). Every field of the event must therefore be
-- rebuildable from the row, for a redelivered source event and for the reconciler's redrive:
-- the push decision, the end of quiet hours the event carried, and the source's correlation id.
-- All nullable: adding them rewrites nothing. NULL on a row from before: the event leaves the field
-- out, as events from before these fields did (push-service then applies its defaults).
ALTER TABLE "notification_items"
  ADD COLUMN "push" BOOLEAN,
  ADD COLUMN "quiet_until" TIMESTAMPTZ(3),
  ADD COLUMN "correlation_id" TEXT;
