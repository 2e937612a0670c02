-- post.deleted (docs/FEED.md "Deleted posts"): the tombstone of every deleted post, never purged, so
-- a post.published that arrives after its deletion (a retry tier, a DLQ replay) is not fanned out.
CREATE TABLE "feed_post_deletions" (
    "post_id" TEXT NOT NULL,
    "deleted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "feed_post_deletions_pkey" PRIMARY KEY ("post_id")
);

-- Owned by feed-service, the only writer and reader (docs/DATABASE.md "Who owns each table").
GRANT CREATE ON SCHEMA public TO community_feed_service;
ALTER TABLE feed_post_deletions OWNER TO community_feed_service;
REVOKE CREATE ON SCHEMA public FROM community_feed_service;
