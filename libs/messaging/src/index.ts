// The public API of the messaging runtime. It knows no system: the topology, the validator and the
// error classifiers all come from the caller (docs/MESSAGING.md).
export {
  createMessaging,
  PROVISIONING_MODES,
  type Messaging,
  type MessagingOptions,
  type Provisioning,
} from './runtime';
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
export {
  brokerUserOf,
  DEFAULT_MAX_MESSAGE_BYTES,
  ForbiddenPublisherError,
  MessageTooLargeError,
  ProducerPolicy,
  type ProducerCheckOptions,
} from './identity';
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
  accessProblems,
  DEFAULT_DELIVERY_LIMIT,
  DLQ_DELIVERY_LIMIT,
  QUEUE_LEADER_LOCATOR,
  deadLetterProblems,
  effectiveSettings,
  DEFAULT_EXCHANGE_RESOURCE,
  dlqName,
  escapeRegex,
  ManagementRefusedError,
  ownQueueNames,
  permissionsFor,
  plan as planTopology,
  queueExchangeName,
  retryQueueName,
  managementRequest,
  managementTargetFor,
  TopologyDriftError,
  TopologyError,
  validateTopology,
  type BindingSpec,
  type ExchangeSpec,
  type BrokerFacts,
  type ExchangeType,
  type ManagementTarget,
  type Permissions,
  type PolicyPlan,
  type ServiceAccess,
  type QueueSpec,
  type Topology,
  type TopologyPlan,
} from './topology';
export { backoffDelay, type BackoffOptions, type Jitter } from './backoff';
export { amqpUrls, connectToAny, primaryAmqpUrl } from './urls';
