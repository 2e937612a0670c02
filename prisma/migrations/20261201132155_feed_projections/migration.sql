-- feed-service projections, user activity and checkpointed fan-out jobs (prisma/schema/feed.prisma,
-- docs/FEED.md). Ids compare in the database collation (C.UTF-8: code point order, the byte order
-- Redis uses for sorted-set members of equal score), which the feed cursor relies on.

-- CreateTable
CREATE TABLE "feed_follows" (
    "follower_id" TEXT NOT NULL,
    "followee_id" TEXT NOT NULL,
    "active" BOOLEAN NOT NULL,
    "occurred_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "feed_follows_pkey" PRIMARY KEY ("follower_id","followee_id")
);

-- CreateTable
CREATE TABLE "feed_authors" (
    "author_id" TEXT NOT NULL,
    "follower_count" INTEGER NOT NULL DEFAULT 0,
    "has_unpushed" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "feed_authors_pkey" PRIMARY KEY ("author_id")
);

-- CreateTable
CREATE TABLE "feed_posts" (
    "post_id" TEXT NOT NULL,
    "author_id" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "excerpt" TEXT NOT NULL,
    "published_at" TIMESTAMPTZ(3) NOT NULL,
    "pushed" BOOLEAN NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "feed_posts_pkey" PRIMARY KEY ("post_id")
);

-- CreateTable
CREATE TABLE "feed_user_activity" (
    "user_id" TEXT NOT NULL,
    "last_active_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "feed_user_activity_pkey" PRIMARY KEY ("user_id")
);

-- CreateTable
CREATE TABLE "feed_fanout_jobs" (
    "post_id" TEXT NOT NULL,
    "author_id" TEXT NOT NULL,
    "published_at" TIMESTAMPTZ(3) NOT NULL,
    "active_since" TIMESTAMPTZ(3) NOT NULL,
    "chunks_total" INTEGER NOT NULL,
    "chunks_done" INTEGER NOT NULL DEFAULT 0,
    "planned_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "done_at" TIMESTAMPTZ(3),

    CONSTRAINT "feed_fanout_jobs_pkey" PRIMARY KEY ("post_id")
);

-- CreateTable
CREATE TABLE "feed_fanout_chunks" (
    "post_id" TEXT NOT NULL,
    "chunk_no" INTEGER NOT NULL,
    "after_follower" TEXT NOT NULL,
    "through_follower" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "written" INTEGER,
    "done_at" TIMESTAMPTZ(3),

    CONSTRAINT "feed_fanout_chunks_pkey" PRIMARY KEY ("post_id","chunk_no")
);

-- CreateIndex
CREATE INDEX "feed_follows_followee_id_follower_id_idx" ON "feed_follows"("followee_id", "follower_id");

-- CreateIndex
CREATE INDEX "feed_posts_author_id_published_at_post_id_idx" ON "feed_posts"("author_id", "published_at" DESC, "post_id" DESC);

-- CreateIndex
CREATE INDEX "feed_user_activity_last_active_at_idx" ON "feed_user_activity"("last_active_at");

-- CreateIndex
CREATE INDEX "feed_fanout_jobs_author_id_done_at_idx" ON "feed_fanout_jobs"("author_id", "done_at");

-- AddForeignKey
ALTER TABLE "feed_fanout_chunks" ADD CONSTRAINT "feed_fanout_chunks_post_id_fkey" FOREIGN KEY ("post_id") REFERENCES "feed_fanout_jobs"("post_id") ON DELETE CASCADE ON UPDATE CASCADE;
