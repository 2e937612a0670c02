import { testDelivery } from '../test-delivery';
import type { Handler } from '../types';
import { logContext } from './log-context';

describe('logContext', () => {
  const logged: Handler<{ key: string }> = async (_event, ctx) => {
    ctx.logger.info('in the handler');
    return 'processed';
  };

  it('binds the message’s identity and the idempotency key to the handler’s logger', async () => {
    const { delivery, logLines } = testDelivery({ messageId: 'evt-9', headers: { 'x-retry-attempt': 1 } });
    await logContext<{ key: string }>((e) => e.key)(logged)({ key: 'mention:c-1:u-2' }, delivery.ctx);
    expect(logLines).toEqual([
      expect.objectContaining({
        msg: 'in the handler',
        queue: 'q',
        handler: 'h',
        eventId: 'evt-9',
        correlationId: 'corr-1',
        attempt: 2,
        messageType: 'user.mentioned',
        idempotencyKey: 'mention:c-1:u-2',
      }),
    ]);
  });

  it('uses the event id as the idempotency key when the consumer names none', async () => {
    const { delivery, logLines } = testDelivery({ messageId: 'evt-3' });
    await logContext<{ key: string }>()(logged)({ key: 'ignored' }, delivery.ctx);
    expect(logLines[0]).toMatchObject({ eventId: 'evt-3', idempotencyKey: 'evt-3' });
  });

  it('creates the child logger only when the handler logs, and leaves the rest of the context as it was', async () => {
    const { delivery } = testDelivery();
    const child = jest.spyOn(delivery.ctx.logger, 'child');
    const quiet: Handler<{ key: string }> = async (_e, ctx) => {
      expect(ctx.signal).toBe(delivery.ctx.signal);
      expect(ctx.attempt).toBe(1);
      return 'processed';
    };
    await logContext<{ key: string }>()(quiet)({ key: 'k' }, delivery.ctx);
    expect(child).not.toHaveBeenCalled();
  });
});
