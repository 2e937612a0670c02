-- The demo community site (apps/demo-community-api), the reference producer.
CREATE TABLE "community_users" (
    "id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "display_name" TEXT NOT NULL,
    "locale" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "community_users_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "community_posts" (
    "id" TEXT NOT NULL,
    "author_id" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "community_posts_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "community_comments" (
    "id" TEXT NOT NULL,
    "post_id" TEXT NOT NULL,
    "author_id" TEXT NOT NULL,
    "parent_comment_id" TEXT,
    "body" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "community_comments_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "community_follows" (
    "follower_id" TEXT NOT NULL,
    "followee_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "community_follows_pkey" PRIMARY KEY ("follower_id","followee_id")
);

CREATE TABLE "community_reactions" (
    "id" TEXT NOT NULL,
    "target_type" TEXT NOT NULL,
    "target_id" TEXT NOT NULL,
    "actor_id" TEXT NOT NULL,
    "emoji" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "community_reactions_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "community_security_alerts" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "detail" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "community_security_alerts_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "community_users_email_key" ON "community_users"("email");
CREATE INDEX "community_posts_author_id_idx" ON "community_posts"("author_id");
CREATE INDEX "community_comments_post_id_idx" ON "community_comments"("post_id");
CREATE INDEX "community_comments_author_id_idx" ON "community_comments"("author_id");
CREATE INDEX "community_comments_parent_comment_id_idx" ON "community_comments"("parent_comment_id");
CREATE INDEX "community_follows_followee_id_idx" ON "community_follows"("followee_id");
CREATE INDEX "community_reactions_target_type_target_id_idx" ON "community_reactions"("target_type", "target_id");
-- One reaction per actor, target and emoji: a repeated click is a no-op, not a second notification.
CREATE UNIQUE INDEX "community_reactions_actor_id_target_type_target_id_emoji_key" ON "community_reactions"("actor_id", "target_type", "target_id", "emoji");
CREATE INDEX "community_security_alerts_user_id_idx" ON "community_security_alerts"("user_id");

ALTER TABLE "community_posts" ADD CONSTRAINT "community_posts_author_id_fkey" FOREIGN KEY ("author_id") REFERENCES "community_users"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "community_comments" ADD CONSTRAINT "community_comments_post_id_fkey" FOREIGN KEY ("post_id") REFERENCES "community_posts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "community_comments" ADD CONSTRAINT "community_comments_author_id_fkey" FOREIGN KEY ("author_id") REFERENCES "community_users"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "community_comments" ADD CONSTRAINT "community_comments_parent_comment_id_fkey" FOREIGN KEY ("parent_comment_id") REFERENCES "community_comments"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "community_follows" ADD CONSTRAINT "community_follows_follower_id_fkey" FOREIGN KEY ("follower_id") REFERENCES "community_users"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "community_follows" ADD CONSTRAINT "community_follows_followee_id_fkey" FOREIGN KEY ("followee_id") REFERENCES "community_users"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "community_reactions" ADD CONSTRAINT "community_reactions_actor_id_fkey" FOREIGN KEY ("actor_id") REFERENCES "community_users"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "community_security_alerts" ADD CONSTRAINT "community_security_alerts_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "community_users"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
