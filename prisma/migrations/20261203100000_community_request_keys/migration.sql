-- Producer-side dedup (docs/CONTRACT.md "Producer-side dedup (Idempotency-Key)"): the demo API's
-- answer to each write it performed, per actor and request key, so a retry is answered with the
-- first answer instead of writing (and emitting) twice. The row is claimed, the write and its outbox
-- rows made, and the answer stored in ONE transaction: a failed write leaves no row, a committed
-- write always has its answer, and a concurrent retry waits on the primary key for that commit.
CREATE TABLE "community_request_keys" (
    -- Who asked (apps/demo-community-api/src/http/actor.ts): `user:<id>`, `admin:<operator>`,
    -- `service:<issuer>` or `anonymous:<client address>`. Keys never match across actors.
    "actor" TEXT NOT NULL,
    -- `key:<Idempotency-Key>` (the client's own key), or `fp:<request hash>` for a client that sent
    -- none (a fingerprint, with the shorter REQUEST_FINGERPRINT_TTL_MS).
    "key" TEXT NOT NULL,
    -- sha256 (hex) of the request's stable serialisation: method, route, params and body. The same
    -- key with another hash is refused (422 IDEMPOTENCY_KEY_REUSED).
    "request_hash" TEXT NOT NULL,
    -- The stored answer. NULL only inside the claiming transaction (the claim comes before the write
    -- whose answer it stores); every committed row has both.
    "status" INTEGER,
    "body" JSONB,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    -- After it, the key may be used again (a claim takes the row over) and the purge deletes it.
    "expires_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "community_request_keys_pkey" PRIMARY KEY ("actor","key")
);

-- The purge (demo-community-api's own scheduled job) deletes by it, oldest first, in batches.
CREATE INDEX "community_request_keys_expires_at_idx" ON "community_request_keys"("expires_at");

-- Owned by the demo API, the only writer and reader (docs/DATABASE.md "Who owns each table").
-- ALTER OWNER needs the new owner to hold CREATE on the schema: only for this statement.
GRANT CREATE ON SCHEMA public TO community_demo_community_api;
ALTER TABLE community_request_keys OWNER TO community_demo_community_api;
REVOKE CREATE ON SCHEMA public FROM community_demo_community_api;

-- The demo API now schedules a job of its own (the purge, libs/db's scheduler): its runs, abandoned
-- runs and history trim, as the reconciler's scheduler has.
GRANT SELECT, INSERT, UPDATE, DELETE ON scheduled_job_runs TO community_demo_community_api;
GRANT USAGE ON SEQUENCE scheduled_job_runs_id_seq TO community_demo_community_api;
