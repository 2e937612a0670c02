import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { DASHBOARDS_DIR, dashboards, panelQueries, render, substituteVariables } from './index';

interface Panel {
  id?: number;
  type: string;
  title: string;
  datasource?: { uid?: string };
  targets?: Array<{ expr?: string; datasource?: { uid?: string } }>;
}
const built = dashboards() as Record<string, { title: string; uid: string; panels: Panel[] }>;

describe('generated Grafana dashboards', () => {
  it('are committed exactly as `npm run infra:dashboards` writes them', () => {
    const committed = readdirSync(DASHBOARDS_DIR)
      .filter((f) => f.endsWith('.json'))
      .sort();
    const generated = render();
    expect(committed).toEqual(Object.keys(generated).sort());
    for (const [file, text] of Object.entries(generated)) {
      // A readable failure: which file is stale, and how to fix it.
      const onDisk = readFileSync(path.join(DASHBOARDS_DIR, file), 'utf8');
      if (onDisk !== text)
        throw new Error(
          `infra/grafana/dashboards/${file} differs from its TypeScript source: run npm run infra:dashboards`,
        );
    }
  });

  it('query the provisioned Prometheus datasource from every panel, with unique ids and titles', () => {
    const provisioning = parse(
      readFileSync(path.join(__dirname, '../provisioning/datasources/prometheus.yml'), 'utf8'),
    ) as {
      datasources: Array<{ uid: string; type: string }>;
    };
    const uid = provisioning.datasources.find((d) => d.type === 'prometheus')!.uid;
    for (const d of Object.values(built)) {
      const panels = d.panels.filter((p) => p.type !== 'row');
      expect(panels.length).toBeGreaterThan(10);
      expect(new Set(d.panels.map((p) => p.id)).size).toBe(d.panels.length);
      expect(new Set(panels.map((p) => p.title)).size).toBe(panels.length);
      for (const p of panels) {
        expect({ panel: p.title, uid: p.datasource?.uid }).toEqual({ panel: p.title, uid });
        expect(p.targets?.length).toBeGreaterThan(0);
        for (const t of p.targets!) expect(t.datasource?.uid).toBe(uid);
      }
    }
  });

  it('cover what the issue asks each dashboard to show', () => {
    const exprs = (file: string) =>
      panelQueries(built[file])
        .map((q) => q.expr)
        .join('\n');
    const workers = exprs('community-workers.json');
    for (const metric of [
      'messaging_consumed_total', // throughput
      'messaging_failed_total', // failures
      'messaging_retried_total', // retries
      'messaging_dead_lettered_total', // DLQ per handler
      'rabbitmq_detailed_queue_messages{queue=~"($queue)\\\\.dlq"}', // DLQ per queue
      'histogram_quantile(0.95, sum by (queue, handler, le) (rate(messaging_handler_duration_seconds_bucket',
      'histogram_quantile(0.99, sum by (queue, handler, le) (rate(messaging_handler_duration_seconds_bucket',
      'messaging_publish_to_consume_lag_seconds_bucket',
      'messaging_in_flight_messages',
      'outbox_lag_seconds',
      'feed_fanout_lag_seconds_bucket',
      'feed_cache_reads_total{result="hit"}',
      'reconciler_counter_drift_users',
      'email_smtp_breaker_open',
    ]) {
      expect(workers).toContain(metric);
    }
    const broker = exprs('rabbitmq.json');
    for (const metric of [
      'rabbitmq_detailed_queue_messages_ready', // depth per queue
      'rabbitmq_detailed_queue_messages_unacked',
      'rabbitmq_detailed_queue_messages_published_total', // publish rate per queue
      'rabbitmq_detailed_channel_messages_delivered_ack_total', // deliver rate per queue
      'rabbitmq_detailed_queue_consumers',
      'rabbitmq_connections',
      'rabbitmq_alarms_memory_used_watermark',
      'rabbitmq_alarms_free_disk_space_watermark',
      'rabbitmq_alarms_file_descriptor_limit',
    ]) {
      expect(broker).toContain(metric);
    }
  });
});

describe('panelQueries and substituteVariables', () => {
  it('find targets in nested (collapsed) rows and interpolate as Grafana does for "All"', () => {
    const queries = panelQueries({
      title: 'D',
      panels: [
        { title: 'top', type: 'timeseries', targets: [{ expr: 'up', refId: 'A' }] },
        {
          title: 'row',
          type: 'row',
          panels: [
            {
              title: 'inner',
              type: 'stat',
              targets: [{ expr: 'sum(rate(x{q=~"$queue"}[$__rate_interval]))', refId: 'B' }],
            },
          ],
        },
      ],
    });
    expect(queries.map((q) => `${q.panel}/${q.refId}`)).toEqual(['top/A', 'inner/B']);
    expect(substituteVariables(queries[1].expr, '1m')).toBe('sum(rate(x{q=~".*"}[1m]))');
    expect(substituteVariables('a{v=~"${vhost}", q=~"$queue"}', '30s', { vhost: 'test-1' })).toBe(
      'a{v=~"test-1", q=~".*"}',
    );
  });
});
