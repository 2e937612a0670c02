import { classify } from '@community/messaging';
import { BreakerOpenError, SmtpAbortedError, SmtpPermanentError, SmtpTransientError, toSmtpError } from './errors';

describe('SMTP error classification', () => {
  const err = (props: Record<string, unknown>) => Object.assign(new Error(String(props.response ?? 'boom')), props);

  it('5xx (except 503) is permanent, carrying the reply; 4xx and connection errors are transient', () => {
    const p = toSmtpError(
      err({ code: 'EENVELOPE', responseCode: 550, response: '550 5.1.1 No such user', command: 'RCPT TO' }),
    );
    expect(p).toBeInstanceOf(SmtpPermanentError);
    expect(p.message).toBe('SMTP RCPT TO refused with 550: 550 5.1.1 No such user');
    expect(classify(p)).toBe('permanent');
    for (const e of [
      err({ code: 'EENVELOPE', responseCode: 451, response: '451 4.7.1 Greylisted' }),
      err({ code: 'ECONNECTION', message: 'Connection closed unexpectedly' }),
      err({ code: 'ETIMEDOUT' }),
      err({ code: 'EMESSAGE', responseCode: 503, response: '503 bad sequence' }),
      // A provider-level refusal (authentication) goes to the breaker, never dead-letters every message.
      err({ code: 'EAUTH', responseCode: 535, response: '535 auth failed' }),
      new Error('socket hang up'),
    ]) {
      const t = toSmtpError(e);
      expect(t).toBeInstanceOf(SmtpTransientError);
      expect(classify(t)).toBe('transient');
    }
    expect(classify(new BreakerOpenError('x'))).toBe('transient');
  });

  it('EABORT (our own signal: a deadline or a shutdown) is an abort, transient but not a provider failure', () => {
    const a = toSmtpError(err({ code: 'EABORT', message: 'Message sending aborted' }));
    expect(a).toBeInstanceOf(SmtpAbortedError);
    expect(classify(a)).toBe('transient');
  });
});
