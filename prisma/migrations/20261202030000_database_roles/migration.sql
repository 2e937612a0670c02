-- Database identity (docs/DEPLOY.md "Database roles"): one NOLOGIN group role per service owns that
-- service's tables; the other roles get only the grants their code uses. Login users are made per
-- deployment (CloudNativePG managed roles, infra/k8s/platform/postgres.yaml) as members of a group.
-- Migrations run as the database owner, which is a member of every group (it must be: ALTER TABLE
-- needs ownership, so a later migration changing a service's table needs its role).
--
-- Roles are cluster-wide, while every test database is a copy of one migrated template, and several
-- templates (other branches' migrations) may be migrated at once: the roles are created only where
-- missing, and a concurrent creation by another database's migration is not an error. Where the
-- platform created the roles and the owner's memberships beforehand (CloudNativePG), this block
-- changes nothing, so the owner needs no CREATEROLE there.
DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY[
    'community_notification_service', 'community_email_service', 'community_feed_service',
    'community_reconciler', 'community_demo_community_api'
  ] LOOP
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', r);
      EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL; -- created meanwhile by another database's migration
      END;
    END IF;
    -- A superuser has every role's privileges already; a plain owner must be a member.
    IF NOT pg_has_role(current_user, r, 'USAGE') THEN
      EXECUTE format('GRANT %I TO %I', r, current_user);
    END IF;
  END LOOP;
END $$;

-- Nobody but the owner creates objects (PostgreSQL 15's default; explicit for older servers).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- ALTER … OWNER TO also needs the new owner to hold CREATE on the schema (unless a superuser runs
-- it): the groups hold it only inside this transaction, revoked below, so no service creates objects.
GRANT CREATE ON SCHEMA public TO community_notification_service, community_email_service, community_feed_service,
  community_reconciler, community_demo_community_api;

-- Owners. A table's serial sequence follows it. The tables of the shared libraries
-- (processed_events: @community/idempotency; outbox_messages: @community/outbox;
-- scheduled_job_runs: @community/db's scheduler) and _prisma_migrations stay with the owner.
ALTER TABLE notification_items OWNER TO community_notification_service;
ALTER TABLE notification_counters OWNER TO community_notification_service;
ALTER TABLE notification_preferences OWNER TO community_notification_service;
ALTER TABLE notification_users OWNER TO community_notification_service;

ALTER TYPE email_delivery_state OWNER TO community_email_service;
ALTER TYPE email_delivery_channel OWNER TO community_email_service;
ALTER TYPE email_digest_window_status OWNER TO community_email_service;
ALTER TABLE email_users OWNER TO community_email_service;
ALTER TABLE email_deliveries OWNER TO community_email_service;
ALTER TABLE email_digest_windows OWNER TO community_email_service;
ALTER TABLE email_digest_items OWNER TO community_email_service;
ALTER TABLE email_suppressions OWNER TO community_email_service;

ALTER TABLE feed_follows OWNER TO community_feed_service;
ALTER TABLE feed_authors OWNER TO community_feed_service;
ALTER TABLE feed_posts OWNER TO community_feed_service;
ALTER TABLE feed_user_activity OWNER TO community_feed_service;
ALTER TABLE feed_fanout_jobs OWNER TO community_feed_service;
ALTER TABLE feed_fanout_chunks OWNER TO community_feed_service;

ALTER TYPE dlq_message_state OWNER TO community_reconciler;
ALTER TABLE dlq_messages OWNER TO community_reconciler;
ALTER TABLE dlq_groups OWNER TO community_reconciler;
ALTER TABLE dlq_operations OWNER TO community_reconciler;
ALTER TABLE dlq_operation_items OWNER TO community_reconciler;
ALTER TABLE counter_repairs OWNER TO community_reconciler;
ALTER TABLE reconciler_cursors OWNER TO community_reconciler;
ALTER TABLE retention_horizons OWNER TO community_reconciler;

ALTER TABLE community_users OWNER TO community_demo_community_api;
ALTER TABLE community_posts OWNER TO community_demo_community_api;
ALTER TABLE community_comments OWNER TO community_demo_community_api;
ALTER TABLE community_follows OWNER TO community_demo_community_api;
ALTER TABLE community_reactions OWNER TO community_demo_community_api;
ALTER TABLE community_security_alerts OWNER TO community_demo_community_api;

REVOKE CREATE ON SCHEMA public FROM community_notification_service, community_email_service, community_feed_service,
  community_reconciler, community_demo_community_api;

-- The shared libraries' tables, as each service's code uses them.
-- Inbox claim (INSERT … ON CONFLICT DO NOTHING RETURNING event_id).
GRANT SELECT, INSERT ON processed_events TO community_notification_service;
-- Producers: enqueue, the relay's claim (FOR UPDATE SKIP LOCKED), mark sent/failed, its purge.
GRANT SELECT, INSERT, UPDATE, DELETE ON outbox_messages TO community_notification_service, community_demo_community_api;
GRANT USAGE ON SEQUENCE outbox_messages_id_seq TO community_notification_service, community_demo_community_api;
-- The scheduler (runs, abandoned runs, its own history trim); the reconciler hosts every job.
GRANT SELECT, INSERT, UPDATE, DELETE ON scheduled_job_runs TO community_reconciler;
GRANT USAGE ON SEQUENCE scheduled_job_runs_id_seq TO community_reconciler;

-- Cross-service grants: the debt issue 20 removes (docs/DEPLOY.md lists them with their code).
-- email-service records its retention horizon (apps/email-service/src/store/horizon.ts).
GRANT SELECT, INSERT, UPDATE ON retention_horizons TO community_email_service;
-- The reconciler: retention (inbox, outbox, email), stuck work, /v1/admin/why, counter repair, feed checks.
GRANT SELECT, DELETE ON processed_events TO community_reconciler;
GRANT SELECT, DELETE ON outbox_messages TO community_reconciler;
GRANT SELECT ON notification_items, notification_preferences TO community_reconciler;
GRANT SELECT, UPDATE (unread_count, version, updated_at) ON notification_counters TO community_reconciler;
GRANT SELECT ON email_users, email_suppressions TO community_reconciler;
GRANT SELECT, DELETE ON email_deliveries, email_digest_items TO community_reconciler;
-- UPDATE on one column only because SELECT … FOR UPDATE SKIP LOCKED (the purge's window lock) needs it.
GRANT SELECT, DELETE, UPDATE (status) ON email_digest_windows TO community_reconciler;
GRANT SELECT ON feed_fanout_jobs, feed_fanout_chunks, feed_follows, feed_posts TO community_reconciler;
