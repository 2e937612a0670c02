// "RabbitMQ": the broker as the services see it, over rabbitmq_prometheus. Written after reading
// what the official RabbitMQ-Overview dashboard (grafana.com 10991) puts first: ready and unacked
// messages, incoming/outgoing rates, publishers/consumers/connections/channels, and how far each
// node is from its memory, disk and file-descriptor limits. Ours adds the per-queue view (depth,
// unacked, consumers, publish and deliver rates, from /metrics/detailed), which the services'
// alerts are about, and leaves out Erlang internals. No JSON was copied. docs/OBSERVABILITY.md
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { graph, labelVariable, row, single } from './common';

const RATE = '[$__rate_interval]';
const Q = 'vhost=~"$vhost", queue=~"$queue"';

export function rabbitmq(): dashboard.DashboardBuilder {
  return new dashboard.DashboardBuilder('RabbitMQ')
    .uid('community-rabbitmq')
    .description(
      'The broker over rabbitmq_prometheus: queues (depth, unacked, consumers, rates), connections, channels and resource alarms.',
    )
    .tags(['community', 'rabbitmq', 'generated'])
    .editable()
    .tooltip(dashboard.DashboardCursorSync.Crosshair)
    .time({ from: 'now-3h', to: 'now' })
    .refresh('30s')
    .timezone('browser')
    .withVariable(labelVariable('vhost', 'Virtual host', 'label_values(rabbitmq_detailed_queue_messages, vhost)'))
    .withVariable(
      labelVariable('queue', 'Queue', 'label_values(rabbitmq_detailed_queue_messages{vhost=~"$vhost"}, queue)'),
    )

    .withRow(row('Overview'))
    .withPanel(
      single({
        title: 'Ready messages',
        description: 'Messages waiting for a consumer, all queues of the node (rabbitmq_queue_messages_ready).',
        unit: 'short',
        steps: [
          [10000, 'orange'],
          [100000, 'red'],
        ],
        query: { expr: 'sum(rabbitmq_queue_messages_ready)' },
      }),
    )
    .withPanel(
      single({
        title: 'Unacked messages',
        description: 'Messages delivered and not yet acknowledged (rabbitmq_queue_messages_unacked).',
        unit: 'short',
        steps: [
          [1000, 'orange'],
          [10000, 'red'],
        ],
        query: { expr: 'sum(rabbitmq_queue_messages_unacked)' },
      }),
    )
    .withPanel(
      single({
        title: 'Incoming messages/s',
        description: 'Messages received by the node per second (rabbitmq_global_messages_received_total).',
        unit: 'ops',
        baseColor: 'blue',
        query: { expr: `sum(rate(rabbitmq_global_messages_received_total${RATE}))` },
      }),
    )
    .withPanel(
      single({
        title: 'Outgoing messages/s',
        description:
          'Messages delivered to consumers per second, redeliveries included (rabbitmq_global_messages_delivered_total).',
        unit: 'ops',
        baseColor: 'blue',
        query: { expr: `sum(rate(rabbitmq_global_messages_delivered_total${RATE}))` },
      }),
    )
    .withPanel(
      single({
        title: 'Connections',
        description: 'Open client connections (rabbitmq_connections).',
        unit: 'short',
        baseColor: 'blue',
        query: { expr: 'sum(rabbitmq_connections)' },
      }),
    )
    .withPanel(
      single({
        title: 'Channels',
        description: 'Open channels (rabbitmq_channels).',
        unit: 'short',
        baseColor: 'blue',
        query: { expr: 'sum(rabbitmq_channels)' },
      }),
    )
    .withPanel(
      single({
        title: 'Consumers',
        description: 'Consumers on all queues (rabbitmq_consumers).',
        unit: 'short',
        baseColor: 'blue',
        query: { expr: 'sum(rabbitmq_consumers)' },
      }),
    )
    .withPanel(
      single({
        title: 'Resource alarms',
        description:
          'Memory, disk and file-descriptor alarms in force on any node; any alarm blocks publishers (rabbitmq_alarms_*).',
        unit: 'short',
        steps: [[1, 'red']],
        query: {
          expr: 'sum(rabbitmq_alarms_memory_used_watermark) + sum(rabbitmq_alarms_free_disk_space_watermark) + sum(rabbitmq_alarms_file_descriptor_limit)',
        },
      }),
    )

    .withRow(row('Queues'))
    .withPanel(
      graph({
        title: 'Ready messages per queue',
        description:
          'Queue depth waiting for a consumer (rabbitmq_detailed_queue_messages_ready). The CommunityQueueBacklogHigh alert fires above 1000 (ready + unacked) for 10 minutes.',
        unit: 'short',
        queries: [
          {
            expr: `sum by (vhost, queue) (rabbitmq_detailed_queue_messages_ready{${Q}})`,
            legend: '{{vhost}} · {{queue}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Unacked messages per queue',
        description:
          'Delivered and not yet acknowledged, per queue (rabbitmq_detailed_queue_messages_unacked); bounded by consumers × prefetch.',
        unit: 'short',
        queries: [
          {
            expr: `sum by (vhost, queue) (rabbitmq_detailed_queue_messages_unacked{${Q}})`,
            legend: '{{vhost}} · {{queue}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Published per queue',
        description:
          'Messages routed into each queue per second (rabbitmq_detailed_queue_messages_published_total, from the channel_queue_exchange_metrics family).',
        unit: 'ops',
        queries: [
          {
            expr: `sum by (queue_vhost, queue) (rate(rabbitmq_detailed_queue_messages_published_total{queue_vhost=~"$vhost", queue=~"$queue"}${RATE}))`,
            legend: '{{queue_vhost}} · {{queue}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Delivered per queue',
        description:
          'Messages delivered to consumers from each queue per second, by manual-ack consumers (rabbitmq_detailed_channel_messages_delivered_ack_total, from the channel_queue_metrics family).',
        unit: 'ops',
        queries: [
          {
            expr: `sum by (vhost, queue) (rate(rabbitmq_detailed_channel_messages_delivered_ack_total{${Q}}${RATE}))`,
            legend: '{{vhost}} · {{queue}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Consumers per queue',
        description:
          'Consumers attached to each queue (rabbitmq_detailed_queue_consumers). DLQs and retry tiers have none by design; a work queue with none fires CommunityQueueNoConsumers.',
        unit: 'short',
        queries: [
          { expr: `sum by (vhost, queue) (rabbitmq_detailed_queue_consumers{${Q}})`, legend: '{{vhost}} · {{queue}}' },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Dead-lettered and unroutable',
        description:
          'Messages dead-lettered by the broker per second, by reason (rabbitmq_global_messages_dead_lettered_*_total), and unroutable publishes (returned or dropped).',
        unit: 'ops',
        queries: [
          {
            expr: `sum(rate(rabbitmq_global_messages_dead_lettered_rejected_total${RATE}))`,
            legend: 'dead-lettered: rejected',
          },
          {
            expr: `sum(rate(rabbitmq_global_messages_dead_lettered_delivery_limit_total${RATE}))`,
            legend: 'dead-lettered: delivery limit',
          },
          {
            expr: `sum(rate(rabbitmq_global_messages_dead_lettered_maxlen_total${RATE}))`,
            legend: 'dead-lettered: max length',
          },
          {
            expr: `sum(rate(rabbitmq_global_messages_dead_lettered_expired_total${RATE}))`,
            legend: 'dead-lettered: expired (retry tiers)',
          },
          {
            expr: `sum(rate(rabbitmq_global_messages_unroutable_returned_total${RATE})) + sum(rate(rabbitmq_global_messages_unroutable_dropped_total${RATE}))`,
            legend: 'unroutable',
          },
        ],
      }),
    )

    .withRow(row('Connections and channels'))
    .withPanel(
      graph({
        title: 'Connections and channels',
        description: 'Open connections and channels (rabbitmq_connections, rabbitmq_channels).',
        unit: 'short',
        queries: [
          { expr: 'sum(rabbitmq_connections)', legend: 'connections' },
          { expr: 'sum(rabbitmq_channels)', legend: 'channels' },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Connection churn',
        description:
          'Connections opened and closed per second (rabbitmq_connections_opened_total, _closed_total). CommunityConnectionChurnHigh fires above 1/s for 10 minutes.',
        unit: 'ops',
        queries: [
          { expr: `sum(rate(rabbitmq_connections_opened_total${RATE}))`, legend: 'opened' },
          { expr: `sum(rate(rabbitmq_connections_closed_total${RATE}))`, legend: 'closed' },
        ],
      }),
    )

    .withRow(row('Resources and alarms'))
    .withPanel(
      graph({
        title: 'Memory before publishers are blocked',
        description:
          'Memory limit (high watermark) minus resident memory, per node (rabbitmq_resident_memory_limit_bytes - rabbitmq_process_resident_memory_bytes). At zero the memory alarm blocks publishers.',
        unit: 'bytes',
        span: 8,
        queries: [
          {
            expr: 'sum by (instance) (rabbitmq_resident_memory_limit_bytes) - sum by (instance) (rabbitmq_process_resident_memory_bytes)',
            legend: '{{instance}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Disk before publishers are blocked',
        description:
          'Free disk minus the free-disk limit, per node (rabbitmq_disk_space_available_bytes - rabbitmq_disk_space_available_limit_bytes).',
        unit: 'bytes',
        span: 8,
        queries: [
          {
            expr: 'sum by (instance) (rabbitmq_disk_space_available_bytes) - sum by (instance) (rabbitmq_disk_space_available_limit_bytes)',
            legend: '{{instance}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'File descriptors used',
        description:
          'Open file descriptors / the limit, per node (rabbitmq_process_open_fds / rabbitmq_process_max_fds). RabbitmqFileDescriptorsHigh fires above 80%.',
        unit: 'percentunit',
        span: 8,
        min: 0,
        max: 1,
        queries: [
          {
            expr: 'sum by (instance) (rabbitmq_process_open_fds) / sum by (instance) (rabbitmq_process_max_fds)',
            legend: '{{instance}}',
          },
        ],
      }),
    )
    .withPanel(
      graph({
        title: 'Alarms',
        description: '1 while an alarm is in force, per node and kind (rabbitmq_alarms_*).',
        unit: 'short',
        min: 0,
        queries: [
          { expr: 'max by (instance) (rabbitmq_alarms_memory_used_watermark)', legend: 'memory {{instance}}' },
          { expr: 'max by (instance) (rabbitmq_alarms_free_disk_space_watermark)', legend: 'disk {{instance}}' },
          {
            expr: 'max by (instance) (rabbitmq_alarms_file_descriptor_limit)',
            legend: 'file descriptors {{instance}}',
          },
        ],
      }),
    );
}
