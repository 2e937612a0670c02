-- Retention of feed-service's fan-out bookkeeping and old posts (docs/FEED.md "Retention"):
-- feed-service's purgeFeedHistory, which the reconciler schedules as `retention.feed` and runs in its
-- process, as its own database user. The tables stay feed-service's; the reconciler gets DELETE on
-- them beside the SELECT it has (docs/DEPLOY.md "Cross-service grants").
GRANT DELETE ON feed_fanout_jobs, feed_fanout_chunks, feed_posts TO community_reconciler;
