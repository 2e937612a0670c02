-- Scheduled jobs' run history (libs/db/src/scheduler, docs/DATABASE.md "Scheduled jobs") and the index
-- email retention scans by (docs/EMAIL.md "Retention"). Models: prisma/schema/jobs.prisma, email.prisma.

-- CreateEnum
CREATE TYPE "scheduled_job_outcome" AS ENUM ('running', 'succeeded', 'failed', 'aborted', 'abandoned');

-- CreateTable
CREATE TABLE "scheduled_job_runs" (
    "id" BIGSERIAL NOT NULL,
    "job" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "outcome" "scheduled_job_outcome" NOT NULL DEFAULT 'running',
    "started_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(6),
    "duration_ms" INTEGER,
    "counts" JSONB NOT NULL DEFAULT '{}',
    "error" TEXT,

    CONSTRAINT "scheduled_job_runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "scheduled_job_runs_job_started_at_idx" ON "scheduled_job_runs"("job", "started_at" DESC);

-- CreateIndex
CREATE INDEX "email_deliveries_created_at_idx" ON "email_deliveries"("created_at");
