/** The queues this service consumes (declared in COMMUNITY_TOPOLOGY, libs/contracts). */
export const CRITICAL_QUEUE = 'notification-service.critical';
export const STANDARD_QUEUE = 'notification-service.standard';

/**
 * The batch handler's deadline. A batch transaction takes milliseconds; 10 s is far past any
 * healthy one and still well inside the broker's consumer_timeout. Inbox retention counts with it
 * (./retention.ts).
 */
export const BATCH_TIMEOUT_MS = 10_000;
