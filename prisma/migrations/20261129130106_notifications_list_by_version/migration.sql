-- The inbox list is ordered by (created_version, id) instead of (created_at, id): per user the version
-- grows in commit order, so a keyset page can never miss a row committed late with an older
-- timestamp, and the same index serves the SSE catch-up query. One index instead of two per insert.

-- DropIndex
DROP INDEX "notification_items_user_id_created_at_id_idx";

-- DropIndex
DROP INDEX "notification_items_user_id_created_version_idx";

-- CreateIndex
CREATE INDEX "notification_items_user_id_created_version_id_idx" ON "notification_items"("user_id", "created_version", "id");
