export { enqueueEvents, outboxWrite, OUTBOX_CHANNEL } from './enqueue';
export type { OutboxItem } from './enqueue';
export { createRelay } from './relay';
export type { OutboxRelay, RelayOptions } from './relay';
export { purgeSentOutbox } from './store';
export { outboxSentAt } from './published';
export { propagationEnabled, startPublishSpan, traceCarrier } from './trace';
export type { PublishSpan, TraceCarrier } from './trace';
export { outboxEventsAbout, outboxEventsWith, type OutboxEvent } from './why-facts';
export {
  envelopeLookupSql,
  sentEventsSql,
  unsentOutbox,
  type BindParam,
  type OutboxRowRef,
  type SentEventsFilter,
  type UnsentOutbox,
} from './inspect';
