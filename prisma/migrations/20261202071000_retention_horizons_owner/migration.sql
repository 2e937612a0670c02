-- retention_horizons belongs to email-service (docs/DATABASE.md "Who owns each table"): its code is the
-- table's only writer (the horizon its EVENT_EXPIRED guard assumes, recorded at every start) and only
-- reader (its exported purgeEmailHistory never purges below it). That purge runs in the reconciler's
-- process, as the reconciler's login, which keeps SELECT; it writes nothing here any more.
-- ALTER OWNER needs the new owner to hold CREATE on the schema: only for this statement.
GRANT CREATE ON SCHEMA public TO community_email_service;
ALTER TABLE retention_horizons OWNER TO community_email_service;
REVOKE CREATE ON SCHEMA public FROM community_email_service;

GRANT SELECT ON retention_horizons TO community_reconciler;
