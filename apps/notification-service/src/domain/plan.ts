// The planning rules live in libs/contracts (notification-rules.ts) so the reconciler's "why" explains
// a decision with the very function that made it.
export { onePerSlot, planNotifications, SLOT_RANK, threadSlot } from '@community/contracts';
export type { PlannedNotification } from '@community/contracts';
