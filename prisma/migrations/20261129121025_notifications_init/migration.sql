-- CreateTable
CREATE TABLE "notification_items" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "user_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "slot_key" TEXT NOT NULL,
    "slot_rank" SMALLINT NOT NULL DEFAULT 0,
    "actor_id" TEXT,
    "resource_type" TEXT NOT NULL,
    "resource_id" TEXT NOT NULL,
    "excerpt" TEXT,
    "in_app" BOOLEAN NOT NULL DEFAULT true,
    "email_channel" TEXT NOT NULL,
    "source_event_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "read_at" TIMESTAMPTZ(3),
    "created_version" BIGINT NOT NULL,
    "state_version" BIGINT NOT NULL,

    CONSTRAINT "notification_items_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "notification_counters" (
    "user_id" TEXT NOT NULL,
    "unread_count" INTEGER NOT NULL DEFAULT 0,
    "version" BIGINT NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "notification_counters_pkey" PRIMARY KEY ("user_id")
);

-- CreateTable
CREATE TABLE "notification_preferences" (
    "user_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "in_app" BOOLEAN NOT NULL,
    "email" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "notification_preferences_pkey" PRIMARY KEY ("user_id","type")
);

-- CreateTable
CREATE TABLE "notification_users" (
    "user_id" TEXT NOT NULL,
    "display_name" TEXT NOT NULL,
    "locale" TEXT,
    "source_occurred_at" TIMESTAMPTZ(3) NOT NULL,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "notification_users_pkey" PRIMARY KEY ("user_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "notification_items_idempotency_key_key" ON "notification_items"("idempotency_key");

-- CreateIndex
CREATE UNIQUE INDEX "notification_items_slot_key_key" ON "notification_items"("slot_key");

-- CreateIndex
CREATE INDEX "notification_items_user_id_created_at_id_idx" ON "notification_items"("user_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "notification_items_user_id_created_version_idx" ON "notification_items"("user_id", "created_version");

