// "Community workers": what the services do with their messages, and the health of the paths
// around them (outbox, feed fan-out, reconciler, SMTP). Series: libs/messaging (messaging_*),
// libs/outbox (outbox_*), email-service (email_*), feed-service (feed_*), reconciler (reconciler_*),
// and the broker's per-queue DLQ depth (rabbitmq_detailed_*). docs/OBSERVABILITY.md
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { graph, labelVariable, row, single, states } from './common';

const SEL = 'service=~"$service", queue=~"$queue"';
const RATE = '[$__rate_interval]';

const quantiles = (metric: string, by: string[], sel: string, legend: string) =>
  [0.95, 0.99].map((q) => ({
    expr: `histogram_quantile(${q}, sum by (${[...by, 'le'].join(', ')}) (rate(${metric}_bucket${sel ? `{${sel}}` : ''}${RATE})))`,
    legend: `p${q * 100}${legend ? ` ${legend}` : ''}`,
  }));

const BREAKER_MAPPINGS: dashboard.ValueMapping[] = [
  {
    type: dashboard.MappingType.ValueToText,
    options: { '0': { text: 'closed', color: 'green', index: 0 }, '1': { text: 'open', color: 'red', index: 1 } },
  },
];

export function communityWorkers(): dashboard.DashboardBuilder {
  return new dashboard.DashboardBuilder('Community workers')
    .uid('community-workers')
    .description(
      'Message handling by queue and handler, and the outbox, feed fan-out, reconciler and SMTP paths around it.',
    )
    .tags(['community', 'generated'])
    .editable()
    .tooltip(dashboard.DashboardCursorSync.Crosshair)
    .time({ from: 'now-3h', to: 'now' })
    .refresh('30s')
    .timezone('browser')
    .withVariable(labelVariable('service', 'Service', 'label_values(messaging_consumed_total, service)'))
    .withVariable(labelVariable('queue', 'Queue', 'label_values(messaging_consumed_total{service=~"$service"}, queue)'))

    .withRow(row('Throughput and failures (per queue and handler)'))
    .withPanel(
      graph({
        title: 'Consumed',
        description: 'Messages delivered to a handler per second (messaging_consumed_total).',
        unit: 'ops',
        span: 8,
        queries: [
          {
            expr: `sum by (queue, handler) (rate(messaging_consumed_total{${SEL}}${RATE}))`,
            legend: '{{queue}} · {{handler}}',
          },
        ],
      }),
    )
    .withPanel(
      single({
        title: 'Failure ratio',
        description:
          'Failed handler attempts / deliveries over the range interval, all selected queues. The CommunityHandlerErrorsHigh alert fires above 5% for 10 minutes.',
        unit: 'percentunit',
        span: 4,
        steps: [
          [0.01, 'orange'],
          [0.05, 'red'],
        ],
        query: {
          expr: `sum(rate(messaging_failed_total{${SEL}}${RATE})) / sum(rate(messaging_consumed_total{${SEL}}${RATE}))`,
        },
      }),
    )
    .withPanel(
      graph({
        title: 'Handled, by outcome',
        description: 'Messages acked per second by outcome (messaging_succeeded_total).',
        unit: 'ops',
        span: 12,
        stack: true,
        queries: [
          {
            expr: `sum by (queue, handler, outcome) (rate(messaging_succeeded_total{${SEL}}${RATE}))`,
            legend: '{{queue}} · {{handler}} · {{outcome}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Failures, by error class',
        description: 'Handler failures per second, each attempt (messaging_failed_total).',
        unit: 'ops',
        span: 8,
        queries: [
          {
            expr: `sum by (queue, handler, error_class) (rate(messaging_failed_total{${SEL}}${RATE}))`,
            legend: '{{queue}} · {{handler}} · {{error_class}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Retries, by tier',
        description: 'Messages sent to a delayed-retry tier per second (messaging_retried_total).',
        unit: 'ops',
        span: 8,
        queries: [
          {
            expr: `sum by (queue, handler, tier) (rate(messaging_retried_total{${SEL}}${RATE}))`,
            legend: '{{queue}} · {{handler}} · {{tier}} ms',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Dead-lettered by the runtime',
        description:
          'Messages the handlers sent to the DLQ per second, by error class (messaging_dead_lettered_total).',
        unit: 'ops',
        span: 8,
        queries: [
          {
            expr: `sum by (queue, handler, error_class) (rate(messaging_dead_lettered_total{${SEL}}${RATE}))`,
            legend: '{{queue}} · {{handler}} · {{error_class}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'DLQ depth',
        description: 'Messages waiting in each DLQ, as the broker counts them (rabbitmq_detailed_queue_messages).',
        unit: 'short',
        span: 12,
        queries: [
          { expr: 'sum by (queue) (rabbitmq_detailed_queue_messages{queue=~"($queue)\\\\.dlq"})', legend: '{{queue}}' },
        ],
      }),
    )

    .withRow(row('Latency and in-flight'))
    .withPanel(
      graph({
        title: 'Handler duration p95 / p99',
        description: 'Handler (or batch handler) duration quantiles (messaging_handler_duration_seconds).',
        unit: 's',
        span: 12,
        queries: quantiles('messaging_handler_duration_seconds', ['queue', 'handler'], SEL, '{{queue}} · {{handler}}'),
      }),
    )
    .withPanel(
      graph({
        title: 'Publish-to-consume lag p95 / p99',
        description:
          'From the event occurrence (or the AMQP timestamp) to the start of handling (messaging_publish_to_consume_lag_seconds). The CommunityQueueMessageTooOld alert fires on p99 > 5 min.',
        unit: 's',
        span: 12,
        queries: quantiles('messaging_publish_to_consume_lag_seconds', ['queue'], SEL, '{{queue}}'),
      }),
    )
    .withPanel(
      graph({
        title: 'In-flight messages',
        description:
          'Messages received and not yet acked, per queue (messaging_in_flight_messages); bounded by the prefetch.',
        unit: 'short',
        span: 12,
        queries: [{ expr: `sum by (queue) (messaging_in_flight_messages{${SEL}})`, legend: '{{queue}}' }],
      }),
    )
    .withPanel(
      graph({
        title: 'Publishes, by outcome',
        description:
          'Publishes per second by outcome (confirmed, unroutable, rejected, timeout) (messaging_published_total).',
        unit: 'ops',
        span: 12,
        queries: [
          {
            expr: `sum by (service, message_type, outcome) (rate(messaging_published_total{service=~"$service"}${RATE}))`,
            legend: '{{service}} · {{message_type}} · {{outcome}}',
          },
        ],
      }),
    )

    .withRow(row('Outbox'))
    .withPanel(
      graph({
        title: 'Outbox lag',
        description:
          'Age of the oldest outbox row not yet confirmed by the broker, per producer (outbox_lag_seconds), and as the reconciler measures it (reconciler_outbox_lag_seconds). The CommunityOutboxLagHigh alert fires above 60 s for 5 minutes.',
        unit: 's',
        span: 12,
        queries: [
          { expr: 'max by (producer) (outbox_lag_seconds)', legend: '{{producer}}' },
          { expr: 'max(reconciler_outbox_lag_seconds)', legend: 'reconciler view' },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Outbox backlog and relay',
        description:
          'Rows waiting (outbox_backlog_messages) and rows handed to the broker per second by outcome (outbox_published_total).',
        unit: 'short',
        span: 12,
        queries: [
          { expr: 'sum by (producer) (outbox_backlog_messages)', legend: 'backlog {{producer}}' },
          {
            expr: `sum by (producer, outcome) (rate(outbox_published_total${RATE}))`,
            legend: 'relayed/s {{producer}} · {{outcome}}',
          },
        ],
      }),
    )

    .withRow(row('Feed fan-out'))
    .withPanel(
      graph({
        title: 'Fan-out lag p95 / p99',
        description:
          "From a post to its entry in the followers' feeds (feed_fanout_lag_seconds). The CommunityFanoutLagHigh alert fires on p95 > 60 s.",
        unit: 's',
        span: 8,
        queries: quantiles('feed_fanout_lag_seconds', [], '', ''),
      }),
    )
    .withPanel(
      single({
        title: 'Feed cache hit ratio',
        description:
          'Feed reads served from the cache / all feed reads (feed_cache_reads_total{result="hit|miss|fallback"}).',
        unit: 'percentunit',
        span: 4,
        baseColor: 'red',
        steps: [
          [0.5, 'orange'],
          [0.8, 'green'],
        ],
        query: {
          expr: `sum(rate(feed_cache_reads_total{result="hit"}${RATE})) / sum(rate(feed_cache_reads_total${RATE}))`,
        },
      }),
    )
    .withPanel(
      graph({
        title: 'Fan-out chunks',
        description:
          'Chunks being written (feed_fanout_chunks_in_flight) and finished per second by outcome (feed_fanout_chunks_total).',
        unit: 'short',
        span: 12,
        queries: [
          { expr: 'sum(feed_fanout_chunks_in_flight)', legend: 'in flight' },
          { expr: `sum by (outcome) (rate(feed_fanout_chunks_total${RATE}))`, legend: '{{outcome}}/s' },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Feed reads and regenerations',
        description:
          'Feed reads per second by cache result (feed_cache_reads_total), feeds rebuilt from the database (feed_regenerations_total) and Redis errors (feed_redis_errors_total).',
        unit: 'ops',
        span: 12,
        queries: [
          { expr: `sum by (result) (rate(feed_cache_reads_total${RATE}))`, legend: 'read {{result}}' },
          { expr: `sum(rate(feed_regenerations_total${RATE}))`, legend: 'regenerations' },
          { expr: `sum(rate(feed_redis_errors_total${RATE}))`, legend: 'Redis errors' },
        ],
      }),
    )

    .withRow(row('Consistency (reconciler)'))
    .withPanel(
      graph({
        title: 'Counter drift',
        description:
          'Users whose unread counter differed from their rows at the last run (reconciler_counter_drift_users), the p95 size of a drift (reconciler_counter_drift_abs) and the counters repaired (reconciler_counter_repairs_total).',
        unit: 'short',
        span: 12,
        queries: [
          { expr: 'max(reconciler_counter_drift_users)', legend: 'users drifted' },
          {
            expr: `histogram_quantile(0.95, sum by (le) (rate(reconciler_counter_drift_abs_bucket${RATE})))`,
            legend: 'p95 drift size',
          },
          { expr: `sum(increase(reconciler_counter_repairs_total${RATE}))`, legend: 'counters repaired' },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Reconciler jobs: time since last success',
        description:
          'Seconds since each job last succeeded (reconciler_job_last_success_timestamp_seconds; `exported_job` is the job). The CommunityJobNotRunning alert fires after 2 hours.',
        unit: 's',
        span: 12,
        queries: [
          {
            expr: 'time() - max by (exported_job) (reconciler_job_last_success_timestamp_seconds)',
            legend: '{{exported_job}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Reconciler job runs, by outcome',
        description: 'Runs per second (reconciler_job_runs_total).',
        unit: 'ops',
        span: 12,
        queries: [
          {
            expr: `sum by (exported_job, outcome) (rate(reconciler_job_runs_total${RATE}))`,
            legend: '{{exported_job}} · {{outcome}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Stuck work',
        description:
          'Work items stuck at the last check, by kind: outbox rows unsent too long, email leases expired without a takeover, feed-service fan-out chunks not done (reconciler_stuck_work), and stuck chunks re-published to feed-service.fanout (reconciler_fanout_chunks_republished_total).',
        unit: 'short',
        span: 12,
        queries: [
          { expr: 'max by (kind) (reconciler_stuck_work)', legend: '{{kind}}' },
          {
            expr: `sum(increase(reconciler_fanout_chunks_republished_total${RATE}))`,
            legend: 'fan-out chunks re-published',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Feed caches (reconciler)',
        description:
          'Materialised feeds compared with feed-service\'s projections (reconciler_feeds_checked_total), those that differed (reconciler_feeds_mismatched_total) and those rebuilt (reconciler_feeds_rebuilt_total), by source: the scheduled sample check (job) or an operator\'s rebuild (api). Mismatches that keep coming point at a fan-out path losing writes (docs/RECONCILER.md "Feed caches").',
        unit: 'short',
        span: 12,
        queries: [
          { expr: `sum by (source) (increase(reconciler_feeds_checked_total${RATE}))`, legend: 'checked · {{source}}' },
          {
            expr: `sum by (source) (increase(reconciler_feeds_mismatched_total${RATE}))`,
            legend: 'mismatched · {{source}}',
          },
          { expr: `sum by (source) (increase(reconciler_feeds_rebuilt_total${RATE}))`, legend: 'rebuilt · {{source}}' },
          { expr: `sum(increase(reconciler_feed_redis_errors_total${RATE}))`, legend: 'redis errors' },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'DLQ watchdog',
        description:
          'Messages in each DLQ and the age of the oldest (reconciler_dlq_messages, reconciler_dlq_oldest_age_seconds), new dead-letter causes (reconciler_dlq_new_causes_total) and watchdog findings (reconciler_watchdog_findings).',
        unit: 'short',
        span: 12,
        queries: [
          { expr: 'max by (queue) (reconciler_dlq_messages)', legend: 'messages {{queue}}' },
          { expr: 'max by (queue) (reconciler_dlq_oldest_age_seconds)', legend: 'oldest age (s) {{queue}}' },
          { expr: `sum(increase(reconciler_dlq_new_causes_total${RATE}))`, legend: 'new causes' },
          { expr: 'sum by (queue, kind) (reconciler_watchdog_findings)', legend: 'finding {{queue}} · {{kind}}' },
        ],
      }),
    )

    .withPanel(
      graph({
        title: 'DLQ console',
        description:
          'Dead letters copied into the console per second, by DLQ (reconciler_dlq_ingested_total), and operator actions by outcome (reconciler_dlq_actions_total: replay, discard).',
        unit: 'ops',
        span: 12,
        queries: [
          { expr: `sum by (queue) (rate(reconciler_dlq_ingested_total${RATE}))`, legend: 'ingested {{queue}}' },
          {
            expr: `sum by (action, outcome) (rate(reconciler_dlq_actions_total${RATE}))`,
            legend: '{{action}} · {{outcome}}',
          },
        ],
      }),
    )

    .withRow(row('Email (SMTP)'))
    .withPanel(
      states({
        title: 'SMTP breaker state',
        description:
          'The SMTP circuit breaker per replica (email_smtp_breaker_open): open pauses the email queues. The CommunitySmtpBreakerOpen alert fires after 5 minutes open.',
        unit: 'short',
        span: 12,
        steps: [[1, 'red']],
        mappings: BREAKER_MAPPINGS,
        query: { expr: 'max by (instance) (email_smtp_breaker_open)', legend: '{{instance}}' },
      }),
    )
    .withPanel(
      graph({
        title: 'Email sends and held messages',
        description:
          'SMTP send attempts per second by outcome (email_sends_total) and messages held while the breaker is open (email_smtp_breaker_held_messages).',
        unit: 'short',
        span: 12,
        queries: [
          { expr: `sum by (channel, outcome) (rate(email_sends_total${RATE}))`, legend: '{{channel}} · {{outcome}}/s' },
          { expr: 'sum(email_smtp_breaker_held_messages)', legend: 'held' },
        ],
      }),
    );
}
