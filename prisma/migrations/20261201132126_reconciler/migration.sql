-- CreateTable
CREATE TABLE "counter_repairs" (
    "id" BIGSERIAL NOT NULL,
    "user_id" TEXT NOT NULL,
    "stored" INTEGER NOT NULL,
    "recounted" INTEGER NOT NULL,
    "source" TEXT NOT NULL,
    "run_id" BIGINT,
    "repaired_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "counter_repairs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "reconciler_cursors" (
    "job" TEXT NOT NULL,
    "cursor" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "reconciler_cursors_pkey" PRIMARY KEY ("job")
);

-- CreateIndex
CREATE INDEX "counter_repairs_user_id_repaired_at_idx" ON "counter_repairs"("user_id", "repaired_at");

-- CreateIndex
CREATE INDEX "counter_repairs_repaired_at_idx" ON "counter_repairs"("repaired_at");
