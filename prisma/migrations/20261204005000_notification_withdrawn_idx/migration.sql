-- The SSE streams' `withdrawn` events (apps/notification-service/src/store/inbox.ts inboxChangesSince):
-- every sync of an open stream asks for the user's rows withdrawn after the version it last sent.
-- Withdrawn rows are few among a user's notifications; partial, so the index stays that small.
-- Not in prisma/schema: partial indexes are a preview feature the generator does not enable, and
-- Prisma's differ ignores them (as for the outbox's, docs/DATABASE.md).
CREATE INDEX "notification_items_withdrawn_idx" ON "notification_items" ("user_id", "state_version") WHERE "withdrawn_at" IS NOT NULL;
