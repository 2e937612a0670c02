import { NOTIFICATION_TYPES } from '@community/contracts';
import { isCriticalEmail, sendPriority } from './lanes';

it('security alerts, and only they, are critical email', () => {
  expect(NOTIFICATION_TYPES.filter(isCriticalEmail)).toEqual(['security_alert']);
  expect(sendPriority('security_alert')).toBe('critical');
  expect(sendPriority('mention')).toBe('regular');
  expect(isCriticalEmail('digest')).toBe(false);
});
