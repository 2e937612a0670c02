-- Lease holders with a heartbeat (docs/EMAIL.md "A dead holder's lease"): each email-service process
-- registers an instance id and refreshes heartbeat_at every EMAIL_HEARTBEAT_INTERVAL_MS; a lease
-- records its holder, and a lease whose holder stopped beating is taken over at once instead of
-- being waited out (EMAIL_LEASE_MS, 2 min by default).
CREATE TABLE "email_service_instances" (
    "instance_id" UUID NOT NULL,
    "host" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "started_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    -- The database clock (now()), the one clock every replica shares, as for the leases.
    "heartbeat_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    -- How long this holder may go without a beat before it counts as dead (its
    -- EMAIL_HOLDER_DEAD_AFTER_MS): declared by the holder, so every reader (other replicas, the
    -- reconciler) applies the same rule without a copy of the setting.
    "dead_after_ms" INTEGER NOT NULL,

    CONSTRAINT "email_service_instances_pkey" PRIMARY KEY ("instance_id")
);

-- NULL: a lease taken by a process from before this migration (waited out, as before).
ALTER TABLE "email_deliveries" ADD COLUMN "lease_holder" UUID;
-- Why the current lease was taken from another sender: 'lease_expired' or 'holder_dead'; NULL otherwise.
ALTER TABLE "email_deliveries" ADD COLUMN "takeover" TEXT;

-- Owned by email-service, the only writer (docs/DEPLOY.md "Database roles"). ALTER OWNER needs the
-- new owner to hold CREATE on the schema: only for this statement.
GRANT CREATE ON SCHEMA public TO community_email_service;
ALTER TABLE email_service_instances OWNER TO community_email_service;
REVOKE CREATE ON SCHEMA public FROM community_email_service;

-- The reconciler's stale-leases line names the leases that wait on a dead holder.
GRANT SELECT ON email_service_instances TO community_reconciler;
