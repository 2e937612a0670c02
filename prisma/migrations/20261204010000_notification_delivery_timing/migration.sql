-- notification-service, delivery timing (docs/NOTIFICATIONS.md "Delivery timing").
-- The user's IANA time zone from user.upserted (NULL: UTC; an upsert without one keeps it).
ALTER TABLE "notification_users" ADD COLUMN "timezone" TEXT;

-- The user's quiet hours, local "HH:MM" times (start > end wraps midnight); both NULL: none. On the
-- per-user row every batch already locks and reads, so deciding quietUntil costs no statement.
ALTER TABLE "notification_counters"
  ADD COLUMN "quiet_start" TEXT,
  ADD COLUMN "quiet_end" TEXT,
  ADD CONSTRAINT "notification_counters_quiet_hours_check" CHECK (
    (quiet_start IS NULL AND quiet_end IS NULL)
    OR (quiet_start ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$' AND quiet_end ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'
        AND quiet_start <> quiet_end)
  );
