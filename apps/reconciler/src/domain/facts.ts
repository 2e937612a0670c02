/**
 * The facts the reconciler's rules (this folder) decide on, as plain data: the management API's
 * queue samples, the services' flow control, the database's stuck work and the `why` facts. The
 * clients (clients/) and stores (store/) produce them; the rules import nothing from either, so each
 * rule reads, and is specified (the *.spec.ts beside it), without a broker, a database or HTTP.
 */

/** One queue as the RabbitMQ management API reports it (the fields the reconciler reads). */
export interface QueueSample {
  name: string;
  messages: number;
  ready: number;
  unacked: number;
  consumers: number;
  /** Cumulative acks since the queue was created (message_stats.ack), 0 when never acked. */
  acked: number;
  /** Acks per second over the broker's last sampling window. */
  ackRate: number;
  /** Unix seconds of the head message's timestamp, when the broker reports it (classic queues). */
  headTimestamp: number | null;
  /**
   * Acks per second averaged over the last RATE_WINDOW_S (the broker's own samples): the drain rate
   * the status lines use, steady where `ackRate` (one 5 s sample) jumps. Absent: not sampled.
   */
  drainRate?: number;
  /** Change of `ready` per second over the same window: negative while the queue shrinks. */
  readyTrend?: number;
}

/** One `*_breaker_open` series, with what the service's /v1/flow-control says about it. */
export interface BreakerReading {
  source: string;
  series: string;
  open: boolean;
  /** The provider's last failure as the service reports it ('' when none; absent when the service has no /v1/flow-control). */
  lastError?: string;
  lastErrorAt?: string | null;
  /** The queues this breaker pauses while open (absent: unknown). */
  pauses?: string[];
}

/** A configured rate limit a service's queues drain at (email-service: SMTP_RATE_PER_SECOND). */
export interface RateLimitReading {
  source: string;
  name: string;
  perSecond: number;
  queues: string[];
}

export interface FlowControlReading {
  breakers: BreakerReading[];
  rateLimits: RateLimitReading[];
}

export interface StuckWork {
  /** Outbox rows unsent for longer than the threshold (relay down, or a row it cannot publish). */
  outboxUnsent: number;
  /** Seconds since the oldest unsent outbox row was written (0 when none). */
  outboxLagSeconds: number;
  /** Producers with stuck rows, for the log line. */
  outboxProducers: string[];
  /** Email deliveries still `sending` whose lease expired more than the grace ago: nobody took them over. */
  emailLeasesExpired: number;
  /** feed-service fan-out chunks not done, of jobs planned longer ago than the threshold. */
  fanoutChunks: number;
}

/** Everything the database (and the DLQs) know about one user and one event / comment / key. */
export interface WhyFacts {
  /** Source events found in the producers' outbox (the envelope as published). */
  events: { eventId: string; producer: string; payload: unknown; createdAt: string; sentAt: string | null }[];
  /** Inbox rows (processed_events) of those events. */
  inbox: { consumer: string; eventId: string; processedAt: string }[];
  items: {
    id: string;
    type: string;
    idempotencyKey: string;
    inApp: boolean;
    emailChannel: string;
    sourceEventId: string;
    createdAt: string;
    readAt: string | null;
  }[];
  preferences: { type: string; inApp: boolean; email: string }[];
  /**
   * notification.created of the items, from their rows (the event id is the row id; no outbox row,
   * no published-at: emitted after the row's commit, or again at its source's redelivery).
   */
  created: { eventId: string; idempotencyKey: string; createdAt: string; withdrawnAt: string | null }[];
  deliveries: {
    idempotencyKey: string;
    channel: string;
    state: string;
    attempts: number;
    lastError: string | null;
    smtpResponse: string | null;
    sentAt: string | null;
    /** The SMTP provider that accepted it (email-service's `primary` or `fallback`); null: not sent, or sent before there were two. */
    provider?: string | null;
    /** Bound to this provider: an attempt there may have delivered it, so no other may send it. */
    pinnedProvider?: string | null;
    /** A held email (quiet hours, delay then check: docs/EMAIL.md "Delivery timing"): due then (ISO). */
    heldUntil?: string | null;
  }[];
  digestItems: { idempotencyKey: string; windowStatus: string; windowEnd: string }[];
  emailUser: boolean;
  suppressions: string[];
  dead: { queue: string; messageId: string; cause: string; at: string | null }[];
  /** Where dead letters were looked for: the DLQ console's table, or the broker's DLQs. */
  dlqSource: string;
}

export interface WhyTarget {
  userId: string;
  eventId?: string;
  commentId?: string;
  idempotencyKey?: string;
}
