-- Grouping (docs/NOTIFICATIONS.md "Grouping"): notifications of one group (type + resource + day
-- bucket of the event's own time) collapse into one inbox item. Every notification keeps its row
-- (its business key, read state, email and retraction work as before); the item is the group's
-- head row, which carries the summary the list shows. Ungrouped rows are their own head.

-- The source event's occurredAt: orders a group's members whatever the arrival order.
ALTER TABLE "notification_items" ADD COLUMN "occurred_at" TIMESTAMPTZ(3);
UPDATE "notification_items" SET "occurred_at" = "created_at";
ALTER TABLE "notification_items" ALTER COLUMN "occurred_at" SET NOT NULL;
ALTER TABLE "notification_items" ALTER COLUMN "occurred_at" SET DEFAULT CURRENT_TIMESTAMP;
-- NULL: never grouped (mentions, security alerts, rows written before grouping).
ALTER TABLE "notification_items" ADD COLUMN "group_key" TEXT;
-- The item columns, meaningful on head rows (item_head): the list shows heads only.
ALTER TABLE "notification_items" ADD COLUMN "item_head" BOOLEAN NOT NULL DEFAULT true;
-- The item's place in the list: the newest member's created_version (a new member re-surfaces it).
ALTER TABLE "notification_items" ADD COLUMN "item_version" BIGINT;
UPDATE "notification_items" SET "item_version" = "created_version";
ALTER TABLE "notification_items" ALTER COLUMN "item_version" SET NOT NULL;
-- Only for rows written without it (tools, tests): the writers set it (store/ingest.ts, store/items.ts).
ALTER TABLE "notification_items" ALTER COLUMN "item_version" SET DEFAULT 0;
ALTER TABLE "notification_items" ADD COLUMN "item_count" INTEGER NOT NULL DEFAULT 1;
ALTER TABLE "notification_items" ADD COLUMN "item_actor_count" INTEGER NOT NULL DEFAULT 1;
ALTER TABLE "notification_items" ADD COLUMN "item_actors" TEXT[] NOT NULL DEFAULT '{}';
-- true while any visible member is unread: what the unread counter counts (one per item).
ALTER TABLE "notification_items" ADD COLUMN "item_unread" BOOLEAN NOT NULL DEFAULT true;
UPDATE "notification_items" SET "item_unread" = ("read_at" IS NULL);

-- The list (keyset on the item's place) and the counter's recount (one index entry per unread item).
CREATE INDEX "notification_items_list_idx" ON "notification_items"("user_id", "item_version", "id")
  WHERE "in_app" AND "item_head";
CREATE INDEX "notification_items_unread_items_idx" ON "notification_items"("user_id")
  WHERE "in_app" AND "item_head" AND "item_unread";
-- A group's members, for its refresh.
CREATE INDEX "notification_items_group_idx" ON "notification_items"("user_id", "group_key")
  WHERE "group_key" IS NOT NULL;
