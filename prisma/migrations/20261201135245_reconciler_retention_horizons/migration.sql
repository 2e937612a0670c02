-- CreateTable
CREATE TABLE "retention_horizons" (
    "name" TEXT NOT NULL,
    "horizon_ms" BIGINT NOT NULL,
    "set_by" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "retention_horizons_pkey" PRIMARY KEY ("name")
);
