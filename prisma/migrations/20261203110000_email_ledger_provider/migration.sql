-- Two SMTP providers (docs/EMAIL.md "Two providers"): SMTP_URL (primary) and SMTP_FALLBACK_URL
-- (fallback), which takes new sends while the primary's circuit breaker is open. The ledger records
-- which provider each attempt is bound to before the SMTP conversation starts, so that an email
-- whose attempt on one provider may have gone out is never sent through the other.
CREATE TYPE "email_provider" AS ENUM ('primary', 'fallback');

-- The provider that accepted the email: written by the UPDATE that marks the row sent. NULL for
-- rows sent before this migration (there was one provider then: SMTP_URL) and rows not sent.
ALTER TABLE "email_deliveries" ADD COLUMN "provider" "email_provider";
-- The provider of the current ('sending') or last attempt, written by the claim that starts it,
-- before any SMTP command. A 'sending' row with NULL here was claimed by a process from before this
-- migration: the primary (a takeover reads it so).
ALTER TABLE "email_deliveries" ADD COLUMN "attempt_provider" "email_provider";
-- Set when an attempt on that provider may have delivered the email (the whole message went out
-- and no reply came, or its sender died mid-send and the row was taken over): every later attempt
-- goes to this provider only. Never cleared while the row lives.
ALTER TABLE "email_deliveries" ADD COLUMN "pinned_provider" "email_provider";

-- Owned by email-service like the ledger's other enums (docs/DATABASE.md "Who owns each table").
GRANT CREATE ON SCHEMA public TO community_email_service;
ALTER TYPE email_provider OWNER TO community_email_service;
REVOKE CREATE ON SCHEMA public FROM community_email_service;
