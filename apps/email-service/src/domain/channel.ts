import { PREFERENCE_LOCKED_TYPES, type EmailChannel, type NotificationCreatedV1 } from '@community/contracts';
import type { Static } from '@sinclair/typebox';

/**
 * notification-service decided the channel from the user's preferences (`emailChannel`); we follow
 * it, except that a locked type (a security alert) always goes out immediately: the contract says
 * it cannot be muted or delayed, whatever the preferences or the event say.
 */
export function decideChannel(data: Static<typeof NotificationCreatedV1>): EmailChannel {
  if (PREFERENCE_LOCKED_TYPES.includes(data.type)) return 'immediate';
  return data.emailChannel;
}
