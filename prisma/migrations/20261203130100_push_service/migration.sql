-- push-service (docs/PUSH.md): the browsers' Web Push subscriptions, the delivery ledger (one row
-- per notification and subscription) and the tombstones of withdrawn notifications. Owned by a role
-- of its own, community_push_service (docs/DATABASE.md "Who owns each table"), created here as the
-- database_roles migration creates the others: only where missing, a concurrent creation by another
-- database's migration is no error, and the owner becomes a member where it is not one already.
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'community_push_service') THEN
    BEGIN
      CREATE ROLE community_push_service NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created meanwhile by another database's migration
    END;
  END IF;
  IF NOT pg_has_role(current_user, 'community_push_service', 'USAGE') THEN
    GRANT community_push_service TO current_user;
  END IF;
END $$;

-- pending → sending → sent | failed | gone (404/410: the subscription was removed) | pending (a retry);
-- pending → cancelled (withdrawn, the user erased, the subscription removed before it was sent).
CREATE TYPE "push_delivery_state" AS ENUM ('pending', 'sending', 'sent', 'failed', 'gone', 'cancelled');

-- One browser's PushSubscription. The endpoint is unique: a browser subscribes once per VAPID key,
-- and the user who registered it last is the one it belongs to (a shared browser after another login).
CREATE TABLE "push_subscriptions" (
    "id" BIGSERIAL NOT NULL,
    "user_id" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    -- The browser's P-256 public key (65 bytes) and auth secret (16 bytes), base64url as it sent them.
    "p256dh" TEXT NOT NULL,
    "auth" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "push_subscriptions_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "push_subscriptions_endpoint_key" ON "push_subscriptions"("endpoint");
CREATE INDEX "push_subscriptions_user_id_idx" ON "push_subscriptions"("user_id");

-- The ledger: one row per (idempotency key, subscription), so a redelivered or duplicated
-- notification.created cannot push twice to one browser. The row carries what is sent (payload,
-- TTL, urgency, topic), so a retry needs nothing but the row. A removed subscription leaves its rows
-- (subscription_id NULL) as the record of what happened.
CREATE TABLE "push_deliveries" (
    "id" BIGSERIAL NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "subscription_id" BIGINT,
    "user_id" TEXT NOT NULL,
    "notification_id" TEXT NOT NULL,
    "notification_type" TEXT NOT NULL,
    "state" "push_delivery_state" NOT NULL DEFAULT 'pending',
    "topic" TEXT NOT NULL,
    "ttl_seconds" INTEGER NOT NULL,
    "urgency" TEXT NOT NULL,
    -- The JSON shown by the service worker; NULL once the user is erased.
    "payload" JSONB,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lease_token" UUID,
    "lease_until" TIMESTAMPTZ(6),
    -- The push service's last answer (201, 410, 429, ...) and why a row failed or was cancelled.
    "last_status" INTEGER,
    "last_error" TEXT,
    -- The notification's expiry: created_at + its TTL. A retry that would come later fails instead.
    "expires_at" TIMESTAMPTZ(6) NOT NULL,
    "sent_at" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "push_deliveries_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "push_deliveries_idempotency_key_subscription_id_key" ON "push_deliveries"("idempotency_key", "subscription_id");
CREATE INDEX "push_deliveries_user_id_idx" ON "push_deliveries"("user_id");
CREATE INDEX "push_deliveries_state_next_attempt_at_idx" ON "push_deliveries"("state", "next_attempt_at");
CREATE INDEX "push_deliveries_created_at_idx" ON "push_deliveries"("created_at");
ALTER TABLE "push_deliveries" ADD CONSTRAINT "push_deliveries_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "push_subscriptions"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- notification.withdrawn: the business key of a withdrawn notification. A push not sent yet is
-- cancelled, and a notification.created arriving after its withdrawal pushes nothing.
CREATE TABLE "push_withdrawals" (
    "idempotency_key" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "withdrawn_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "push_withdrawals_pkey" PRIMARY KEY ("idempotency_key")
);
CREATE INDEX "push_withdrawals_user_id_idx" ON "push_withdrawals"("user_id");

-- Owners: push-service, the only reader and writer. ALTER OWNER needs the new owner to hold CREATE
-- on the schema: only for these statements.
GRANT CREATE ON SCHEMA public TO community_push_service;
ALTER TYPE push_delivery_state OWNER TO community_push_service;
ALTER TABLE push_subscriptions OWNER TO community_push_service;
ALTER TABLE push_deliveries OWNER TO community_push_service;
ALTER TABLE push_withdrawals OWNER TO community_push_service;
REVOKE CREATE ON SCHEMA public FROM community_push_service;

-- Its erasure handler claims user.erased in the inbox (@community/idempotency), as every consumer of it does.
GRANT SELECT, INSERT ON processed_events TO community_push_service;
