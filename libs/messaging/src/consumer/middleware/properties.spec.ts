import { classify } from '../../errors';
import { testDelivery } from '../test-delivery';
import { checkMessageProperties, messageProperties } from './properties';

describe('checkMessageProperties', () => {
  it.each([
    [{ messageId: 'e-1', contentType: 'application/json' }],
    [{ messageId: 'e-1', contentType: 'application/json; charset=utf-8' }],
    [{ messageId: 'e-1', contentType: 'Application/JSON' }],
    [{ messageId: 'e-1', contentType: undefined }],
  ])('accepts %j', (props) => {
    expect(() => checkMessageProperties(props)).not.toThrow();
  });

  it.each([
    [{ messageId: undefined, contentType: 'application/json' }, 'MISSING_MESSAGE_ID'],
    [{ messageId: '', contentType: 'application/json' }, 'MISSING_MESSAGE_ID'],
    [{ messageId: 'e-1', contentType: 'text/plain' }, 'UNSUPPORTED_CONTENT_TYPE'],
    [{ messageId: 'e-1', contentType: 'application/jsonx' }, 'UNSUPPORTED_CONTENT_TYPE'],
    [{ messageId: 'e-1', contentType: 'application/octet-stream' }, 'UNSUPPORTED_CONTENT_TYPE'],
  ])('refuses %j as a permanent %s', (props, code) => {
    let error: unknown;
    try {
      checkMessageProperties(props);
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ code });
    expect(classify(error)).toBe('permanent');
  });
});

describe('messageProperties (pipeline step)', () => {
  it('passes a message with a messageId on, and stops one without before the body is read', async () => {
    const next = jest.fn(async () => 'processed' as const);
    const ok = testDelivery({ messageId: 'e-1' });
    await messageProperties()(next)(ok.delivery.msg.content, ok.delivery.ctx);
    expect(next).toHaveBeenCalledTimes(1);

    const bad = testDelivery();
    (bad.delivery.msg.properties as { messageId?: string }).messageId = undefined;
    await expect(messageProperties()(next)(bad.delivery.msg.content, bad.delivery.ctx)).rejects.toMatchObject({
      code: 'MISSING_MESSAGE_ID',
    });
    expect(next).toHaveBeenCalledTimes(1);
  });
});
