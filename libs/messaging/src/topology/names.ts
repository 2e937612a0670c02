/** Names derived from a work queue's name. One place, so retry tiers and DLQs are always found. */

/** Used when a topology names none (see Topology.deadLetterExchange / policyPrefix). */
export const DEFAULT_DEAD_LETTER_EXCHANGE = 'dlx';
export const DEFAULT_POLICY_PREFIX = 'messaging';

export const dlqName = (queue: string): string => `${queue}.dlq`;

export const retryQueueName = (queue: string, delayMs: number): string => `${queue}.retry.${delayLabel(delayMs)}`;

/**
 * The direct exchange of a work queue's group (work queue, retry tiers, DLQ), keyed by queue name.
 * Retry and DLQ copies, and sends to a queue by name, go through it instead of the default exchange:
 * RabbitMQ authorises the default exchange (`amq.default`) as a whole, so a user that may write to
 * it may write into every queue of the vhost, while write on this exchange reaches only this group.
 */
export const queueExchangeName = (queue: string): string => `${queue}.direct`;

export const policyName = (prefix: string, queue: string): string => `${prefix}:${queue}`;

/** 1000 → "1s", 120000 → "2m", 250 → "250ms": readable in the management UI. */
export function delayLabel(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

export const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
