/**
 * The broker topology as data. A system declares its own with these types (the community one is
 * `COMMUNITY_TOPOLOGY` in libs/contracts, next to the events it routes); tests declare small ones.
 * Everything the broker needs (queues, retry tiers, DLQs, bindings,
 * policies) is derived from it by `plan()` — nobody calls assertQueue anywhere else.
 */
export type ExchangeType = 'topic' | 'direct' | 'fanout' | 'headers' | 'x-consistent-hash';

export interface ExchangeSpec {
  name: string;
  type: ExchangeType;
  /**
   * Exchange-to-exchange bindings: this exchange receives what `exchange` routes with these keys
   * (RabbitMQ's exchange.bind). E.g. a headers exchange fed only `notification.created` from the
   * topic exchange, so its header bindings never look at any other event.
   */
  bindings?: BindingSpec[];
}

/**
 * A binding from `exchange` (the source) to a queue or exchange: by routing keys (topic, direct
 * exchanges), or by message headers (a headers exchange: `headers` must match, all of them or any
 * of them as `match` says, default all). One of the two, never both.
 */
export interface BindingSpec {
  exchange: string;
  /** Routing keys (event types, or topic patterns such as `user.*`). */
  routingKeys?: string[];
  /** Header values a message must carry (headers exchanges only). */
  headers?: Record<string, string | number | boolean>;
  /** `all` (default): every header must match; `any`: one is enough. */
  match?: 'all' | 'any';
}

/** One work queue of one service. Its retry tiers and DLQ are derived from it. */
export interface QueueSpec {
  /** `<service>.<purpose>`, e.g. `notification-service.critical`. */
  name: string;
  bindings: BindingSpec[];
  /**
   * Delays of the delayed-retry tiers, in ms. A transient failure goes to the next tier; after the
   * last one the message goes to the DLQ. `[]` means: no retries, straight to the DLQ.
   */
  retryDelaysMs: number[];
  /**
   * Quorum-queue delivery limit (applied as a policy): a message redelivered more often than this
   * — typically because it crashes its consumer — is dead-lettered by the broker. Keep it above
   * the number of consumer restarts a healthy message can see in a backlog (default 50).
   */
  deliveryLimit?: number;
  /**
   * Max messages in the queue (a policy, with overflow=drop-head): past it the oldest message is
   * dead-lettered to the DLQ with reason `maxlen`; publishers are never refused because of it.
   */
  maxLength?: number;
  /** One active consumer at a time, for strict per-queue ordering. */
  singleActiveConsumer?: boolean;
}

export interface Topology {
  exchanges: ExchangeSpec[];
  queues: QueueSpec[];
  /** The direct exchange the broker dead-letters through (delivery limit) to each queue's DLQ. Default `dlx`. */
  deadLetterExchange?: string;
  /** Policies are named `<prefix>:<queue>`, so an operator sees whose they are. Default `messaging`. */
  policyPrefix?: string;
  /**
   * Who may publish what: event type → the services that produce it (docs/MESSAGING.md "Broker
   * identity"). When set, a consumer dead-letters (permanent, no retry) a message whose AMQP
   * `user-id` is not the broker user of one of them, of a replayer, or of the consumer itself (its
   * own retry copies), and one without `user-id` unless the runtime is told to accept those for a
   * transition. A deployment maps services to broker users (`createMessaging({ producerCheck })`;
   * by default a service's broker user is its name, as in infra/rabbitmq/definitions.json).
   * Unset: no producer check (a topology of a test or a benchmark).
   */
  producers?: Record<string, string[]>;
  /** Services that may re-send any type to any queue: the DLQ replayer, stuck-work repair. */
  replayers?: string[];
}

/** What the broker gets: every queue, exchange, binding and policy, fully spelled out. */
export interface TopologyPlan {
  exchanges: ExchangeSpec[];
  queues: Array<{ name: string; role: 'work' | 'retry' | 'dlq'; arguments: Record<string, unknown> }>;
  bindings: Array<{ exchange: string; queue: string; routingKey: string; arguments?: Record<string, unknown> }>;
  /** Exchange-to-exchange bindings: `source` routes to `destination`. */
  exchangeBindings: Array<{
    source: string;
    destination: string;
    routingKey: string;
    arguments?: Record<string, unknown>;
  }>;
  policies: PolicyPlan[];
}

export interface PolicyPlan {
  name: string;
  pattern: string;
  applyTo: 'queues';
  priority: number;
  definition: Record<string, string | number>;
}
