-- push-service: a ledger row's inbox group (notification.created's groupKey, docs/NOTIFICATIONS.md
-- "Grouping") and its actor, so a group member's push says how many there are so far, counted from
-- the ledger (docs/PUSH.md "Grouped pushes"). NULL group_key: never grouped (a mention, a security
-- alert, a producer from before groupKey); NULL actor_id: no actor, or the actor was erased.
ALTER TABLE "push_deliveries" ADD COLUMN "group_key" TEXT;
ALTER TABLE "push_deliveries" ADD COLUMN "actor_id" TEXT;
-- The count of a user's group when its next member is decided.
CREATE INDEX "push_deliveries_user_id_group_key_idx" ON "push_deliveries"("user_id", "group_key");
-- user.erased of an actor clears it from the other users' rows.
CREATE INDEX "push_deliveries_actor_id_idx" ON "push_deliveries"("actor_id");
