-- User erasure (docs/RUNBOOK.md "Erasure"): the reconciler's audit of every erasure an operator
-- requested, written in the same transaction as the user.erased event in the outbox, so a crash
-- between the two loses neither (docs/OUTBOX.md).
CREATE TABLE "user_erasures" (
    "id" BIGSERIAL NOT NULL,
    -- The request's identity: the client's Idempotency-Key (the ops CLI sends one per invocation),
    -- or a fresh uuid without one. A retried request finds its row and publishes nothing more.
    "request_key" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    -- The operator the reconciler verified the admin token as (its kid's binding in ADMIN_KEYS).
    "requested_by" TEXT NOT NULL,
    -- The user.erased envelope id (outbox_messages.event_id; the consumers' inbox key).
    "event_id" UUID NOT NULL,
    "requested_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "user_erasures_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "user_erasures_request_key_key" ON "user_erasures"("request_key");
CREATE UNIQUE INDEX "user_erasures_event_id_key" ON "user_erasures"("event_id");
CREATE INDEX "user_erasures_user_id_requested_at_idx" ON "user_erasures"("user_id", "requested_at");

-- Owned by the reconciler, the only writer (docs/DEPLOY.md "Database roles"). ALTER OWNER needs the
-- new owner to hold CREATE on the schema: only for this statement.
GRANT CREATE ON SCHEMA public TO community_reconciler;
ALTER TABLE user_erasures OWNER TO community_reconciler;
REVOKE CREATE ON SCHEMA public FROM community_reconciler;

-- The reconciler is now a producer (user.erased, libs/outbox): enqueue, its relay's claim
-- (FOR UPDATE SKIP LOCKED) and marks, beside the SELECT, DELETE its retention job already had.
GRANT INSERT, UPDATE ON outbox_messages TO community_reconciler;
GRANT USAGE ON SEQUENCE outbox_messages_id_seq TO community_reconciler;

-- email-service and feed-service claim user.erased in the inbox (processed_events), like
-- notification-service: a redelivered erasure has no second effect.
GRANT SELECT, INSERT ON processed_events TO community_email_service, community_feed_service;
