-- The demo API's users may say their time zone (an IANA name, optional): it goes out on
-- user.upserted, where email-service sends the daily digest at the user's local hour and
-- notification-service computes quiet hours in it (docs/NOTIFICATIONS.md "Delivery timing").
ALTER TABLE "community_users" ADD COLUMN "timezone" TEXT;
