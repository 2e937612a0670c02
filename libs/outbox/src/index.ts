export { enqueueEvents, outboxWriteSql, OUTBOX_CHANNEL } from './enqueue';
export type { OutboxItem } from './enqueue';
export { createRelay, retryDelayMs } from './relay';
export type { OutboxRelay, RelayOptions } from './relay';
export { outboxMetrics } from './metrics';
export type { OutboxMetrics } from './metrics';
export { purgeSent } from './store';
