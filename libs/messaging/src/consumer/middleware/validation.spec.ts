import { PermanentError } from '../../errors';
import { testDelivery } from '../test-delivery';
import type { Handler, MessageContext } from '../types';
import { validation } from './validation';

const parse = (body: Buffer): { n: number } => {
  const v = JSON.parse(body.toString()) as { n?: unknown };
  if (typeof v.n !== 'number') throw new PermanentError('/n: expected a number');
  return { n: v.n };
};

describe('validation', () => {
  it('hands the handler the parsed event and the same context', async () => {
    const { delivery } = testDelivery();
    const seen: Array<[unknown, MessageContext]> = [];
    const stub: Handler<{ n: number }> = async (event, ctx) => void seen.push([event, ctx]);
    await validation<{ n: number }, MessageContext>(parse)(stub)(Buffer.from('{"n":7}'), delivery.ctx);
    expect(seen).toEqual([[{ n: 7 }, delivery.ctx]]);
  });

  it('rejects with the validator’s error and never calls the handler', async () => {
    const { delivery } = testDelivery();
    const stub = jest.fn(async () => 'processed' as const);
    const run = validation<{ n: number }, MessageContext>(parse)(stub);
    await expect(run(Buffer.from('{"n":"x"}'), delivery.ctx)).rejects.toThrow(PermanentError);
    await expect(run(Buffer.from('{not json'), delivery.ctx)).rejects.toThrow(SyntaxError);
    expect(stub).not.toHaveBeenCalled();
  });
});
