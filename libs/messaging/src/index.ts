// The public API of the messaging runtime. It knows no system: the topology, the validator and the
// error classifiers all come from the caller (docs/MESSAGING.md).
export { createMessaging, type Messaging, type MessagingOptions } from './runtime';
export type { Consumer } from './consumer/consumer';
export type {
  BatchConsumerOptions,
  BatchContext,
  BatchHandler,
  BatchItem,
  ConsumerOptions,
  Handler,
  MessageContext,
  Middleware,
  Outcome,
  SingleConsumerOptions,
} from './consumer/types';
export { DEAD_LETTER_HEADERS } from './consumer/headers';
export { messageTraceContext } from './consumer/middleware/tracing';
export type { EnvelopeLike, PublishOptions, Publisher } from './publisher';
export type { RuntimeMetrics } from './metrics';
export {
  classify,
  errorMessage,
  HandlerTimeoutError,
  PermanentError,
  PublishRejectedError,
  PublishTimeoutError,
  TransientError,
  UnroutableError,
  type ErrorClassifier,
  type FailureKind,
} from './errors';
export {
  DEFAULT_DELIVERY_LIMIT,
  managementRequest,
  managementTargetFor,
  TopologyDriftError,
  TopologyError,
  validateTopology,
  type BindingSpec,
  type ExchangeSpec,
  type ExchangeType,
  type ManagementTarget,
  type PolicyPlan,
  type QueueSpec,
  type Topology,
  type TopologyPlan,
} from './topology';
export { backoffDelay, type BackoffOptions, type Jitter } from './backoff';
