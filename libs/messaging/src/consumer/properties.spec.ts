import { classify } from '../errors';
import { checkMessageProperties } from './properties';

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
