import { Registry } from 'prom-client';
import { PermanentError } from '../errors';
import { runtimeMetrics } from '../metrics';
import { ConsumerSeries } from './middleware/metrics';
import { buildPipeline, compose } from './pipeline';
import { testDelivery } from './test-delivery';
import type { Handler, Middleware } from './types';

describe('compose', () => {
  it('makes the first middleware the outermost', async () => {
    const order: string[] = [];
    const tag =
      (name: string): Middleware<string> =>
      (next) =>
      async (e, ctx) => {
        order.push(`${name}>`);
        const out = await next(e, ctx);
        order.push(`<${name}`);
        return out;
      };
    const handler: Handler<string> = async () => void order.push('handler');
    const { delivery } = testDelivery();
    await compose([tag('a'), tag('b')], handler)('x', delivery.ctx);
    expect(order).toEqual(['a>', 'b>', 'handler', '<b', '<a']);
  });
});

describe('buildPipeline', () => {
  const pipeline = (middleware: Middleware<{ n: number }>[], terminal: Handler<{ n: number }>) => {
    const metrics = runtimeMetrics(new Registry());
    return buildPipeline<{ n: number }>({
      queue: 'q',
      handler: 'h',
      logger: testDelivery().delivery.ctx.logger,
      retryDelaysMs: [1000],
      classifiers: [],
      metrics,
      series: new ConsumerSeries(metrics, 'q', 'h'),
      validate: (body) => {
        try {
          return JSON.parse(body.toString()) as { n: number };
        } catch {
          throw new PermanentError('malformed JSON', 'MALFORMED');
        }
      },
      middleware,
      timeoutMs: 1000,
      terminal,
    });
  };

  it('runs an app’s middleware inside the runtime’s: on the validated event, under the deadline’s signal', async () => {
    const { delivery, published } = testDelivery({ body: '{"n":1}' });
    const seen: string[] = [];
    const app: Middleware<{ n: number }> = (next) => async (event, ctx) => {
      seen.push(`app n=${event.n} own-signal=${ctx.signal !== delivery.ctx.signal}`);
      return next(event, ctx);
    };
    await expect(pipeline([app], async () => 'processed')(delivery.msg.content, delivery.ctx)).resolves.toBe(
      'processed',
    );
    expect(seen).toEqual(['app n=1 own-signal=true']);
    expect(published).toEqual([]);
  });

  it('routes what an app’s middleware throws like a handler’s error', async () => {
    const { delivery, published } = testDelivery({ body: '{"n":2}' });
    const refuse: Middleware<{ n: number }> = () => async () =>
      Promise.reject(new PermanentError('refused by the app'));
    const handler = jest.fn(async () => 'processed' as const);
    await expect(pipeline([refuse], handler)(delivery.msg.content, delivery.ctx)).resolves.toBeUndefined();
    expect(handler).not.toHaveBeenCalled();
    expect(published.map((p) => [p.routingKey, p.options.headers?.['x-error-message']])).toEqual([
      ['q.dlq', 'refused by the app'],
    ]);
  });

  it('dead-letters a body the validator refuses before any app middleware runs', async () => {
    const { delivery, published } = testDelivery({ body: '{not json' });
    const perMessage = jest.fn();
    const app: Middleware<{ n: number }> = (next) => async (e, ctx) => {
      perMessage();
      return next(e, ctx);
    };
    await pipeline([app], async () => 'processed')(delivery.msg.content, delivery.ctx);
    expect(perMessage).not.toHaveBeenCalled();
    expect(published[0].routingKey).toBe('q.dlq');
    expect(published[0].options.headers).toMatchObject({
      'x-error-class': 'PermanentError',
      'x-error-message': 'malformed JSON',
      'x-error-kind': 'permanent',
    });
  });
});
