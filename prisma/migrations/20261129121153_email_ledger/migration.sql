-- email-service: users' addresses (projection of user.upserted), the delivery ledger, digest windows
-- and items, local opt-outs. Models: prisma/schema/email.prisma; design: docs/EMAIL.md.

-- CreateEnum
CREATE TYPE "email_delivery_state" AS ENUM ('pending', 'sending', 'sent', 'failed', 'suppressed');

-- CreateEnum
CREATE TYPE "email_delivery_channel" AS ENUM ('immediate', 'digest');

-- CreateEnum
CREATE TYPE "email_digest_window_status" AS ENUM ('open', 'flushed', 'empty');

-- CreateTable
CREATE TABLE "email_users" (
    "user_id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "display_name" TEXT NOT NULL,
    "locale" TEXT,
    "source_event_id" TEXT NOT NULL,
    "source_occurred_at" TIMESTAMPTZ(6) NOT NULL,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "email_users_pkey" PRIMARY KEY ("user_id")
);

-- CreateTable
CREATE TABLE "email_deliveries" (
    "id" BIGSERIAL NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "channel" "email_delivery_channel" NOT NULL,
    "user_id" TEXT NOT NULL,
    "notification_type" TEXT,
    "notification_id" TEXT,
    "digest_window_id" BIGINT,
    "message_id" TEXT NOT NULL,
    "state" "email_delivery_state" NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lease_token" UUID,
    "lease_until" TIMESTAMPTZ(6),
    "next_attempt_at" TIMESTAMPTZ(6),
    "last_error" TEXT,
    "smtp_response" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sent_at" TIMESTAMPTZ(6),

    CONSTRAINT "email_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "email_digest_windows" (
    "id" BIGSERIAL NOT NULL,
    "user_id" TEXT NOT NULL,
    "window_start" TIMESTAMPTZ(6) NOT NULL,
    "window_end" TIMESTAMPTZ(6) NOT NULL,
    "status" "email_digest_window_status" NOT NULL DEFAULT 'open',
    "flushed_at" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "email_digest_windows_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "email_digest_items" (
    "idempotency_key" TEXT NOT NULL,
    "window_id" BIGINT NOT NULL,
    "user_id" TEXT NOT NULL,
    "notification_id" TEXT NOT NULL,
    "notification_type" TEXT NOT NULL,
    "actor_id" TEXT,
    "resource_type" TEXT NOT NULL,
    "resource_id" TEXT NOT NULL,
    "excerpt" TEXT,
    "occurred_at" TIMESTAMPTZ(6) NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "email_digest_items_pkey" PRIMARY KEY ("idempotency_key")
);

-- CreateTable
CREATE TABLE "email_suppressions" (
    "user_id" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(6),
    "sync_attempts" INTEGER NOT NULL DEFAULT 0,
    "next_sync_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_sync_error" TEXT,

    CONSTRAINT "email_suppressions_pkey" PRIMARY KEY ("user_id","scope")
);

-- CreateIndex
CREATE INDEX "email_deliveries_channel_state_next_attempt_at_idx" ON "email_deliveries"("channel", "state", "next_attempt_at");

-- CreateIndex
CREATE INDEX "email_deliveries_digest_window_id_idx" ON "email_deliveries"("digest_window_id");

-- CreateIndex
CREATE UNIQUE INDEX "email_deliveries_idempotency_key_channel_key" ON "email_deliveries"("idempotency_key", "channel");

-- CreateIndex
CREATE INDEX "email_digest_windows_status_window_end_idx" ON "email_digest_windows"("status", "window_end");

-- CreateIndex
CREATE UNIQUE INDEX "email_digest_windows_user_id_window_start_key" ON "email_digest_windows"("user_id", "window_start");

-- CreateIndex
CREATE INDEX "email_digest_items_window_id_idx" ON "email_digest_items"("window_id");

-- CreateIndex
CREATE INDEX "email_suppressions_next_sync_at_idx" ON "email_suppressions"("next_sync_at");

-- AddForeignKey
ALTER TABLE "email_deliveries" ADD CONSTRAINT "email_deliveries_digest_window_id_fkey" FOREIGN KEY ("digest_window_id") REFERENCES "email_digest_windows"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "email_digest_items" ADD CONSTRAINT "email_digest_items_window_id_fkey" FOREIGN KEY ("window_id") REFERENCES "email_digest_windows"("id") ON DELETE CASCADE ON UPDATE CASCADE;
