import { UnsubscribeTokens } from './token';

describe('unsubscribe tokens', () => {
  const tokens = new UnsubscribeTokens('a-secret-that-is-long-enough-for-tests');

  it('round-trips, and refuses other secrets, tampering and unsubscribable scopes', () => {
    const token = tokens.sign({ userId: 'u:1', scope: 'reaction' });
    expect(tokens.verify(token)).toEqual({ userId: 'u:1', scope: 'reaction' });
    expect(new UnsubscribeTokens('another-secret-entirely-0123456789').verify(token)).toBeUndefined();
    expect(tokens.verify(`${token}x`)).toBeUndefined();
    expect(tokens.verify(tokens.sign({ userId: 'u', scope: 'security_alert' as never }))).toBeUndefined();
    expect(tokens.verify(undefined)).toBeUndefined();
  });
});
