-- The push channel in the preferences (docs/PUSH.md "Which types push"): a user's choice of Web Push
-- for one notification type. NULL: no choice recorded (every row written before this column, and a
-- row whose push was never set): the type's default (DEFAULT_PREFERENCES in libs/contracts), so a
-- user who turned follow emails off does not get follow pushes by a column default.
ALTER TABLE "notification_preferences" ADD COLUMN "push" BOOLEAN;
