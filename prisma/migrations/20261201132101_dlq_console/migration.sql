-- The reconciler's DLQ console (apps/reconciler/src/dlq, docs/DLQ-CONSOLE.md). Model: prisma/schema/dlq.prisma.

-- CreateEnum
CREATE TYPE "dlq_message_state" AS ENUM ('pending', 'replaying', 'replayed', 'discarded');

-- CreateTable
CREATE TABLE "dlq_messages" (
    "id" BIGSERIAL NOT NULL,
    "queue" TEXT NOT NULL,
    "original_queue" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "dead_lettered_at" TIMESTAMPTZ(6) NOT NULL,
    "properties" JSONB NOT NULL,
    "headers" JSONB NOT NULL,
    "body" BYTEA NOT NULL,
    "routing_key" TEXT,
    "message_type" TEXT,
    "error_class" TEXT NOT NULL,
    "error_message" TEXT NOT NULL,
    "error_kind" TEXT NOT NULL,
    "handler" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "fingerprint" TEXT NOT NULL,
    "state" "dlq_message_state" NOT NULL DEFAULT 'pending',
    "ingested_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "acted_at" TIMESTAMPTZ(6),
    "replay_count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "dlq_messages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "dlq_groups" (
    "fingerprint" TEXT NOT NULL,
    "error_class" TEXT NOT NULL,
    "normalized" TEXT NOT NULL,
    "handler" TEXT,
    "message_type" TEXT,
    "sample_message" TEXT NOT NULL,
    "first_seen" TIMESTAMPTZ(6) NOT NULL,
    "last_seen" TIMESTAMPTZ(6) NOT NULL,
    "total" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "dlq_groups_pkey" PRIMARY KEY ("fingerprint")
);

-- CreateTable
CREATE TABLE "dlq_operations" (
    "id" BIGSERIAL NOT NULL,
    "action" TEXT NOT NULL,
    "requested_by" TEXT NOT NULL,
    "selection" JSONB NOT NULL,
    "rate_per_second" INTEGER,
    "state" TEXT NOT NULL DEFAULT 'running',
    "matched" INTEGER NOT NULL,
    "succeeded" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "skipped" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeat_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(6),

    CONSTRAINT "dlq_operations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "dlq_operation_items" (
    "operation_id" BIGINT NOT NULL,
    "message_id" BIGINT NOT NULL,
    "result" TEXT NOT NULL DEFAULT 'pending',
    "detail" TEXT,
    "at" TIMESTAMPTZ(6),

    CONSTRAINT "dlq_operation_items_pkey" PRIMARY KEY ("operation_id","message_id")
);

-- CreateIndex
CREATE INDEX "dlq_messages_state_queue_id_idx" ON "dlq_messages"("state", "queue", "id");

-- CreateIndex
CREATE INDEX "dlq_messages_fingerprint_state_idx" ON "dlq_messages"("fingerprint", "state");

-- CreateIndex
CREATE UNIQUE INDEX "dlq_messages_message_id_dead_lettered_at_key" ON "dlq_messages"("message_id", "dead_lettered_at");

-- CreateIndex
CREATE INDEX "dlq_operations_state_idx" ON "dlq_operations"("state");

-- CreateIndex
CREATE INDEX "dlq_operation_items_message_id_idx" ON "dlq_operation_items"("message_id");

-- AddForeignKey
ALTER TABLE "dlq_operation_items" ADD CONSTRAINT "dlq_operation_items_operation_id_fkey" FOREIGN KEY ("operation_id") REFERENCES "dlq_operations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
