-- The reconciler's lost-work check reads notification rows by created_at window (a notification with
-- an email decision and no ledger row: docs/RECONCILER.md "Lost work"), now that notification.created
-- has no outbox row to scan. BRIN, not B-tree: rows arrive in created_at order, so a block-range
-- summary finds the window in a few pages, and it costs the insert path almost nothing (a B-tree
-- would be a fifth index to maintain on every notification).
CREATE INDEX "notification_items_created_at_idx" ON "notification_items" USING BRIN ("created_at");
