import { decideChannel } from './channel';

it("follows notification-service's channel, except that a security alert always goes out immediately", () => {
  const data = { notificationId: 'n', userId: 'u', idempotencyKey: 'k', resourceType: 'comment', resourceId: 'r' };
  expect(decideChannel({ ...data, type: 'mention', emailChannel: 'immediate' })).toBe('immediate');
  expect(decideChannel({ ...data, type: 'follow', emailChannel: 'digest' })).toBe('digest');
  expect(decideChannel({ ...data, type: 'reply', emailChannel: 'off' })).toBe('off');
  expect(decideChannel({ ...data, type: 'security_alert', emailChannel: 'off' })).toBe('immediate');
  expect(decideChannel({ ...data, type: 'security_alert', emailChannel: 'digest' })).toBe('immediate');
});
