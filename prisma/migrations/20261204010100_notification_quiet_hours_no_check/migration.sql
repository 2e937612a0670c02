-- Drops the CHECK that 20261204010000 put on the quiet-hours columns: the wasm schema engine of
-- `npm run db:status` crashes on any CHECK constraint in its drift check (docs/NOTIFICATIONS.md
-- "Data model"), as it did for the earlier ones left out on purpose. The format and start <> end are
-- enforced by the one writer, PUT /v1/users/:userId/preferences (quietHoursIssue), and its tests.
ALTER TABLE "notification_counters" DROP CONSTRAINT "notification_counters_quiet_hours_check";
