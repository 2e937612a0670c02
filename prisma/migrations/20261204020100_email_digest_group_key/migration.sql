-- email-service: a digest item's inbox group (notification.created's groupKey, docs/NOTIFICATIONS.md
-- "Grouping"); items of one group collapse into one digest line (docs/EMAIL.md "Grouped digest lines").
-- NULL: never grouped (a producer from before groupKey, or a type that does not group).
ALTER TABLE "email_digest_items" ADD COLUMN "group_key" TEXT;
