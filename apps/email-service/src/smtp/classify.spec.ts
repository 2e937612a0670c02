import { classify } from '@community/messaging';
import { classifySmtpError } from './classify';
import { SmtpPermanentError, toSmtpError } from './errors';

const nodemailerError = (props: Record<string, unknown>) =>
  Object.assign(new Error(String(props.response ?? 'smtp')), props);

describe('classifySmtpError', () => {
  it.each([
    ['550 no such user', { code: 'EENVELOPE', responseCode: 550, response: '550 5.1.1 No such user' }, 'permanent'],
    ['554 rejected', { code: 'EMESSAGE', responseCode: 554, response: '554 rejected' }, 'permanent'],
    ['envelope without a recipient', { code: 'EENVELOPE', message: 'No recipients defined' }, 'permanent'],
    ['451 greylisted', { code: 'EENVELOPE', responseCode: 451, response: '451 4.7.1 Greylisted' }, 'transient'],
    [
      '503 bad sequence (about the session)',
      { code: 'EMESSAGE', responseCode: 503, response: '503 bad sequence' },
      'transient',
    ],
    [
      '535 on AUTH (about the provider)',
      { code: 'EAUTH', responseCode: 535, response: '535 auth failed' },
      'transient',
    ],
  ])('%s → %s, as toSmtpError says', (_name, props, kind) => {
    const err = nodemailerError(props);
    expect(classifySmtpError(err)).toBe(kind);
    expect(toSmtpError(err) instanceof SmtpPermanentError ? 'permanent' : 'transient').toBe(kind);
  });

  it('leaves errors without an SMTP reply to the default, which toSmtpError agrees with (transient)', () => {
    for (const err of [
      nodemailerError({ code: 'ECONNECTION' }),
      nodemailerError({ code: 'ETIMEDOUT' }),
      new Error('socket hang up'),
    ]) {
      expect(classifySmtpError(err)).toBeUndefined();
      expect(classify(err, [classifySmtpError])).toBe('transient');
      expect(toSmtpError(err) instanceof SmtpPermanentError).toBe(false);
    }
  });
});
