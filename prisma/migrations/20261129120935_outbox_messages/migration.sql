-- Transactional outbox shared by every producer (libs/outbox, docs/OUTBOX.md).
CREATE TABLE "outbox_messages" (
    "id" BIGSERIAL NOT NULL,
    "producer" TEXT NOT NULL,
    "aggregate_id" TEXT NOT NULL,
    "event_id" UUID NOT NULL,
    "event_type" TEXT NOT NULL,
    "routing_key" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sent_at" TIMESTAMPTZ(6),
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "next_attempt_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "outbox_messages_pkey" PRIMARY KEY ("id")
);

-- One envelope id, one row: a producer retrying its transaction cannot enqueue the same event twice.
CREATE UNIQUE INDEX "outbox_messages_event_id_key" ON "outbox_messages"("event_id");

-- The relay's scan: unsent rows of one producer in id order. Partial, so it stays as small as the
-- backlog however many sent rows the table keeps.
CREATE INDEX "outbox_messages_unsent_idx" ON "outbox_messages"("producer", "id") WHERE "sent_at" IS NULL;

-- The per-aggregate ordering check: "is there an older unsent row of the same aggregate?" is one
-- probe into this index.
CREATE INDEX "outbox_messages_unsent_aggregate_idx" ON "outbox_messages"("producer", "aggregate_id", "id") WHERE "sent_at" IS NULL;

-- Retention: sent rows oldest first.
CREATE INDEX "outbox_messages_sent_idx" ON "outbox_messages"("producer", "sent_at") WHERE "sent_at" IS NOT NULL;
