import { PREFERENCE_LOCKED_TYPES } from '@community/contracts';

/**
 * Critical email: the types that get the critical lane (their own queue, and the first slot the
 * provider's rate limit frees). The locked types (security alerts) are the critical ones: they can
 * be neither muted nor delayed. Mentions are not: they are the bulk that forms the backlog.
 */
export function isCriticalEmail(type: string): boolean {
  return (PREFERENCE_LOCKED_TYPES as readonly string[]).includes(type);
}

export type SendPriority = 'critical' | 'regular';

export function sendPriority(type: string): SendPriority {
  return isCriticalEmail(type) ? 'critical' : 'regular';
}
