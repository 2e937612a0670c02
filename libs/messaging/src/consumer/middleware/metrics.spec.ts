import { Registry } from 'prom-client';
import { runtimeMetrics } from '../../metrics';
import { testDelivery } from '../test-delivery';
import type { Handler } from '../types';
import { ConsumerSeries, metrics } from './metrics';

/** One sample of a metric: a counter's value, or a histogram's `<name>_count` / `<name>_sum`. */
async function sample(
  registry: Registry,
  metric: string,
  labels: Record<string, string>,
  suffix = '',
): Promise<number | undefined> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === metric);
  const values = (found?.values ?? []) as Array<{
    value: number;
    labels: Record<string, unknown>;
    metricName?: string;
  }>;
  return values.find(
    (v) =>
      (suffix === '' || v.metricName === `${metric}${suffix}`) &&
      Object.entries(labels).every(([k, l]) => v.labels[k] === l),
  )?.value;
}

describe('metrics', () => {
  function setup(timeHandler = true) {
    const registry = new Registry();
    const m = runtimeMetrics(registry);
    const { delivery, logLines } = testDelivery();
    const middleware = metrics<{ occurredAt: string }>({
      series: new ConsumerSeries(m, 'q', 'h'),
      logger: delivery.ctx.logger,
      timeHandler,
    });
    return { registry, delivery, logLines, middleware };
  }
  const event = { occurredAt: new Date(Date.now() - 2000).toISOString() };
  const labels = { queue: 'q', handler: 'h', message_type: 'user.mentioned' };
  const DURATION = 'messaging_handler_duration_seconds';

  it('counts a handled message by outcome, times it, and observes the lag from the event’s occurrence', async () => {
    const { registry, delivery, logLines, middleware } = setup();
    const stub: Handler<typeof event> = async () => 'duplicate';
    await expect(middleware(stub)(event, delivery.ctx)).resolves.toBe('duplicate');
    expect(await sample(registry, 'messaging_consumed_total', labels)).toBe(1);
    expect(await sample(registry, 'messaging_succeeded_total', { ...labels, outcome: 'duplicate' })).toBe(1);
    expect(await sample(registry, DURATION, { ...labels, outcome: 'duplicate' }, '_count')).toBe(1);
    expect(
      await sample(registry, 'messaging_publish_to_consume_lag_seconds', { queue: 'q' }, '_sum'),
    ).toBeGreaterThanOrEqual(1.9);
    expect(logLines).toEqual([expect.objectContaining({ msg: 'handled', outcome: 'duplicate' })]);
  });

  it('times a failed call as outcome "failed" and passes the error on, counting no success', async () => {
    const { registry, delivery, middleware } = setup();
    const boom = new Error('boom');
    await expect(middleware(async () => Promise.reject(boom))(event, delivery.ctx)).rejects.toBe(boom);
    expect(await sample(registry, DURATION, { ...labels, outcome: 'failed' }, '_count')).toBe(1);
    expect(await sample(registry, 'messaging_succeeded_total', labels)).toBeUndefined();
  });

  it('leaves the timing to the batch runner in batch mode', async () => {
    const { registry, delivery, middleware } = setup(false);
    await middleware(async () => undefined)(event, delivery.ctx);
    expect(await sample(registry, 'messaging_succeeded_total', { ...labels, outcome: 'processed' })).toBe(1);
    expect((await sample(registry, DURATION, { ...labels, outcome: 'processed' }, '_count')) ?? 0).toBe(0);
  });
});
