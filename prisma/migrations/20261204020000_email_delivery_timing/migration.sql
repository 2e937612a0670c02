-- email-service, delivery timing (docs/EMAIL.md "Delivery timing").
-- A held immediate email (quiet hours, delay-then-check) waits in the ledger as `pending` with
-- `next_attempt_at` = its not-before time; `held` is the notification it is composed from then.
ALTER TABLE "email_deliveries" ADD COLUMN "held" JSONB;

-- The user's IANA time zone from user.upserted (NULL: UTC), for the daily digest at the local hour.
ALTER TABLE "email_users" ADD COLUMN "timezone" TEXT;
