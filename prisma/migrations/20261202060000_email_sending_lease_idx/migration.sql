-- The leases in flight: email-service's heartbeat counts the leases of dead holders every
-- EMAIL_HEARTBEAT_INTERVAL_MS in every replica (store/instances.ts deadHolderLeases), and the
-- reconciler's stale-leases and lost-work checks look for expired ones. All ask for state = 'sending',
-- a handful of rows among the ledger's millions (30 days of history): without this index each ask is
-- a scan of the whole table. Partial, so it stays as small as the work in flight.
-- Not in prisma/schema: partial indexes are a preview feature the generator does not enable, and
-- Prisma's differ ignores them (as for the outbox's, docs/DATABASE.md).
CREATE INDEX "email_deliveries_sending_lease_idx" ON "email_deliveries" ("lease_until") WHERE "state" = 'sending';
