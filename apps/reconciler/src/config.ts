// The reconciler's variables, one entry each (name, kind, default, bounds, description), and the
// start-up checks between them. It is over 300 lines because the reconciler schedules every owner's
// retention and repair job, and each job has its own settings: one list is where an operator looks.
import {
  commonConfig,
  ConfigError,
  loadConfig,
  type ConfigIssue,
  type ConfigOf,
  type ConfigSpec,
} from '@community/config';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import { longestRedeliveryMs } from '@community/idempotency';
import { DEFAULT_DELIVERY_LIMIT, type QueueSpec } from '@community/messaging';
import { FEED_CONFIG } from '@community/feed-service';
import { DEFAULT_SEND_HANDLER_TIMEOUT_MS } from '@community/email-service';

/** Names this service everywhere: logs, metrics, the AMQP connection, the pg application_name. */
export const SERVICE_NAME = 'reconciler';

const DAY_MS = 86_400_000;

type FeedEntryName = (typeof FEED_CONFIG)[number]['name'];
/** feed-service's own entry (same default, description and bounds): both sides must agree on the Redis layout. */
function feedEntry<N extends FeedEntryName>(name: N): Extract<(typeof FEED_CONFIG)[number], { name: N }> {
  const entry = FEED_CONFIG.find((e): e is Extract<(typeof FEED_CONFIG)[number], { name: N }> => e.name === name);
  if (!entry) throw new Error(`feed-service has no config entry ${name}`);
  return entry;
}

/** The shared variables (docs/CONTRACT.md "Configuration") plus the reconciler's tunables (docs/RECONCILER.md). */
export const RECONCILER_CONFIG = [
  ...commonConfig(SERVICE_NAME),
  {
    name: 'DATABASE_POOL_MAX',
    kind: 'int',
    default: 8,
    min: 3,
    max: 100,
    description:
      'pg pool size: at most half of it holds the locks of running jobs (one each; they work through the rest, beside HTTP)',
  },
  // RABBITMQ_MANAGEMENT_URL: in commonConfig (every app applies queue policies through it).
  // Unread counters (docs/RECONCILER.md "Unread counters").
  {
    name: 'COUNTER_RECOUNT_INTERVAL_MS',
    kind: 'duration-ms',
    default: 60_000,
    min: 1_000,
    max: 86_400_000,
    description: 'how often users with recent inbox changes are recounted',
  },
  {
    name: 'COUNTER_RECENT_WINDOW_MS',
    kind: 'duration-ms',
    default: 600_000,
    min: 1_000,
    max: 7 * DAY_MS,
    description:
      'a user is "recent" when their counter row changed within this window (must exceed COUNTER_RECOUNT_INTERVAL_MS)',
  },
  {
    name: 'COUNTER_SWEEP_INTERVAL_MS',
    kind: 'duration-ms',
    default: 12 * 3_600_000,
    min: 1_000,
    max: 7 * DAY_MS,
    description: 'how often every user is recounted',
  },
  {
    name: 'COUNTER_BATCH_SIZE',
    kind: 'int',
    default: 1_000,
    min: 1,
    max: 20_000,
    description: 'users locked, recounted and repaired per transaction',
  },
  {
    name: 'COUNTER_REPAIRS_RETENTION_DAYS',
    kind: 'int',
    default: 90,
    min: 1,
    max: 3650,
    description:
      'days an audit row of a counter repair (counter_repairs) is kept; retention.counter-repairs deletes older ones',
  },
  // Retention, moved here from notification-service and email-service (docs/RECONCILER.md "Retention").
  {
    name: 'RETENTION_INTERVAL_MS',
    kind: 'duration-ms',
    default: 3_600_000,
    min: 1_000,
    max: DAY_MS,
    description: 'how often the retention jobs run',
  },
  {
    name: 'RETENTION_BATCH_SIZE',
    kind: 'int',
    default: 5_000,
    min: 1,
    max: 100_000,
    description: 'rows deleted per statement (short transactions)',
  },
  {
    name: 'INBOX_RETENTION_DAYS',
    kind: 'int',
    default: 7,
    min: 1,
    max: 3650,
    description:
      "days an inbox row (libs/idempotency's processed events) is kept; must exceed the longest redelivery of every queue (checked at start)",
  },
  {
    name: 'INBOX_HANDLER_TIMEOUT_MAX_MS',
    kind: 'duration-ms',
    default: DEFAULT_SEND_HANDLER_TIMEOUT_MS,
    min: 1_000,
    description:
      "the longest handler deadline of any inbox consumer, for the horizon check; by default email-service's send deadline at its defaults (breaker hold + 2 leases + 30 s = 870 s, its DEFAULT_SEND_HANDLER_TIMEOUT_MS)",
  },
  {
    name: 'EMAIL_RETENTION_DAYS',
    kind: 'int',
    default: 30,
    min: 2,
    max: 3650,
    description:
      "days finished email ledger rows and closed digest windows are kept; the email purge (email-service's) never goes below the horizon its EVENT_EXPIRED guard recorded at its start, so the two settings need not match",
  },
  {
    name: 'OUTBOX_RETENTION_DAYS',
    kind: 'int',
    default: 3,
    min: 1,
    max: 3650,
    description: 'days a sent outbox row is kept (every producer)',
  },
  {
    name: 'FEED_RETENTION_DAYS',
    kind: 'int',
    default: 30,
    min: 7,
    max: 3650,
    description:
      "days a done fan-out job (and its chunks) is kept, and the least age of a post that no feed needs any more (its author has FEED_CAP newer posts): feed-service's purgeFeedHistory",
  },
  // Stuck work and watchdog (docs/RECONCILER.md "Stuck work", "Watchdog").
  {
    name: 'STUCK_INTERVAL_MS',
    kind: 'duration-ms',
    default: 60_000,
    min: 1_000,
    max: DAY_MS,
    description: 'how often stuck work is looked for',
  },
  {
    name: 'STUCK_OUTBOX_AFTER_MS',
    kind: 'duration-ms',
    default: 300_000,
    min: 1_000,
    description: 'an outbox row unsent for longer than this is stuck',
  },
  {
    name: 'STUCK_LEASE_GRACE_MS',
    kind: 'duration-ms',
    default: 300_000,
    min: 1_000,
    description: 'an email lease expired for longer than this without a takeover is stuck',
  },
  // Lost work (docs/RECONCILER.md "Lost work"): due rows whose message no queue holds.
  {
    name: 'LOST_WORK_GRACE_MS',
    kind: 'duration-ms',
    default: 120_000,
    min: 1_000,
    max: DAY_MS,
    description:
      'an outbox row published longer ago than this has reached its queue or was lost (exceeds the management stats interval and the relay transit)',
  },
  {
    name: 'LOST_WORK_LOOKBACK_MS',
    kind: 'duration-ms',
    default: DAY_MS,
    min: 60_000,
    max: 30 * DAY_MS,
    description: 'how far back the lost-work check looks for due rows (a re-drive takes any --since)',
  },
  {
    name: 'WATCHDOG_INTERVAL_MS',
    kind: 'duration-ms',
    default: 30_000,
    min: 1_000,
    max: 3_600_000,
    description: 'how often queues are sampled through the management API',
  },
  {
    name: 'WATCHDOG_SAMPLES',
    kind: 'int',
    default: 4,
    min: 2,
    max: 100,
    description: 'consecutive samples of growth (and no ack) before a queue is reported',
  },
  {
    name: 'STATUS_BACKLOG_MAX',
    kind: 'int',
    default: 10_000,
    min: 1,
    description: 'status check "backlog": messages ready in one work queue',
  },
  {
    name: 'STATUS_OLDEST_MESSAGE_MAX_MS',
    kind: 'duration-ms',
    default: 300_000,
    min: 1_000,
    description: 'status check "oldest-message": age of the head message of a work queue',
  },
  {
    name: 'STATUS_DRAIN_ETA_MAX_MS',
    kind: 'duration-ms',
    default: 1_800_000,
    min: 1_000,
    max: DAY_MS,
    description:
      'status check "oldest-message": a shrinking quorum queue whose drain ETA is within this is a healthy drain, not an old message',
  },
  {
    name: 'STATUS_OUTBOX_LAG_MAX_MS',
    kind: 'duration-ms',
    default: 60_000,
    min: 1_000,
    description: 'status check "outbox-lag": age of the oldest unsent outbox row',
  },
  {
    name: 'BREAKER_METRICS_URLS',
    kind: 'string',
    default: 'http://127.0.0.1:3002/metrics',
    description:
      'comma-separated /metrics URLs whose *_breaker_open series the status check "breakers" reads ("none": no source)',
  },
  // Feed caches (docs/RECONCILER.md "Feed caches"): feed-service's Redis, read and rebuilt here.
  feedEntry('FEED_REDIS_PREFIX'),
  feedEntry('FEED_CAP'),
  feedEntry('FEED_ACTIVE_WINDOW_DAYS'),
  {
    name: 'FEED_CHECK_INTERVAL_MS',
    kind: 'duration-ms',
    default: 300_000,
    min: 1_000,
    max: DAY_MS,
    description: 'how often a sample of materialised feeds is checked against the projections',
  },
  {
    name: 'FEED_CHECK_SAMPLE',
    kind: 'int',
    default: 200,
    min: 1,
    max: 100_000,
    description:
      'feeds checked per run: the check continues a SCAN of ready: keys where the last run stopped, so every feed is checked in turn',
  },
  {
    name: 'FEED_CHECK_SETTLE_MS',
    kind: 'duration-ms',
    default: 120_000,
    min: 0,
    max: DAY_MS,
    description:
      'posts published within this window are left out of the comparison (a fan-out still in flight is not drift)',
  },
  {
    name: 'STUCK_FANOUT_AFTER_MS',
    kind: 'duration-ms',
    default: 600_000,
    min: 1_000,
    description:
      'a fan-out chunk of a job planned longer ago than this and not done is stuck (and re-published, at most once per this interval)',
  },
  // DLQ console follow-ups (docs/DLQ-CONSOLE.md).
  {
    name: 'DLQ_RETENTION_DAYS',
    kind: 'int',
    default: 30,
    min: 1,
    max: 3650,
    description:
      'days a dead-lettered message in a final state (replayed, discarded) is kept after its last action; pending ones are never purged',
  },
  {
    name: 'STATUS_DLQ_MAX',
    kind: 'int',
    default: 0,
    min: 0,
    description:
      'status check "dlq": messages pending in all DLQs together above which the check fails (0: any pending message fails it)',
  },
  {
    name: 'SCHEDULER',
    kind: 'bool',
    default: true,
    description: 'run the scheduled jobs on this replica (false: HTTP only)',
  },
] as const satisfies ConfigSpec;

export type ReconcilerConfig = ConfigOf<typeof RECONCILER_CONFIG>;

/**
 * The inbox horizon must outlast every bounded way a copy of an event can still reach a consumer
 * (libs/idempotency horizon.ts): checked against every queue of the topology, since this one job
 * purges every consumer's inbox rows.
 */
export function inboxRetentionIssues(
  config: Pick<ReconcilerConfig, 'INBOX_RETENTION_DAYS' | 'INBOX_HANDLER_TIMEOUT_MAX_MS'>,
  queues: readonly QueueSpec[] = COMMUNITY_TOPOLOGY.queues,
): ConfigIssue[] {
  const retentionMs = config.INBOX_RETENTION_DAYS * DAY_MS;
  for (const queue of queues) {
    const longest = longestRedeliveryMs({
      retryDelaysMs: queue.retryDelaysMs,
      deliveryLimit: queue.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT,
      handlerTimeoutMs: config.INBOX_HANDLER_TIMEOUT_MAX_MS,
    });
    if (retentionMs <= longest) {
      return [
        {
          name: 'INBOX_RETENTION_DAYS',
          message: `INBOX_RETENTION_DAYS: ${config.INBOX_RETENTION_DAYS} days must exceed the longest redelivery of ${queue.name} (${Math.ceil(longest / 3_600_000)} h: its retry tiers plus every delivery running to INBOX_HANDLER_TIMEOUT_MAX_MS)`,
        },
      ];
    }
  }
  return [];
}

export function loadReconcilerConfig(env: Record<string, string | undefined> = process.env): ReconcilerConfig {
  const config = loadConfig(RECONCILER_CONFIG, env);
  const issues = inboxRetentionIssues(config);
  if (config.COUNTER_RECENT_WINDOW_MS <= config.COUNTER_RECOUNT_INTERVAL_MS) {
    issues.push({
      name: 'COUNTER_RECENT_WINDOW_MS',
      message: `COUNTER_RECENT_WINDOW_MS: ${config.COUNTER_RECENT_WINDOW_MS} must exceed COUNTER_RECOUNT_INTERVAL_MS (${config.COUNTER_RECOUNT_INTERVAL_MS}), or changes between two runs go unchecked`,
    });
  }
  if (config.RABBITMQ_MANAGEMENT_URL !== '' && !/^https?:\/\//.test(config.RABBITMQ_MANAGEMENT_URL)) {
    // Only the scheme is quoted: the value carries the management user's password.
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(config.RABBITMQ_MANAGEMENT_URL)?.[0] ?? 'none';
    issues.push({
      name: 'RABBITMQ_MANAGEMENT_URL',
      message: `RABBITMQ_MANAGEMENT_URL: must start with http:// or https:// (its scheme: ${JSON.stringify(scheme)})`,
    });
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return config;
}
