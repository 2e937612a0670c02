-- notification.withdrawn (docs/EMAIL.md "Withdrawn notifications"): one tombstone per withdrawn
-- notification's business key. A pending immediate email is suppressed; a digest leaves out every
-- item with a tombstone when it is flushed and sent; a notification.created arriving after its
-- withdrawal sends nothing. Never purged by age: rows are small and a late copy must still find it.
CREATE TABLE "email_withdrawals" (
    "idempotency_key" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    -- What withdrew it (`comment:{id}`, `user:{id}`, ...), for the logs and `why`.
    "subject" TEXT NOT NULL,
    "withdrawn_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "email_withdrawals_pkey" PRIMARY KEY ("idempotency_key")
);
CREATE INDEX "email_withdrawals_user_id_idx" ON "email_withdrawals"("user_id");

-- Owned by email-service, the only writer and reader (docs/DATABASE.md "Who owns each table").
GRANT CREATE ON SCHEMA public TO community_email_service;
ALTER TABLE email_withdrawals OWNER TO community_email_service;
REVOKE CREATE ON SCHEMA public FROM community_email_service;
