/** Names derived from a work queue's name. One place, so retry tiers and DLQs are always found. */

/** Used when a topology names none (see Topology.deadLetterExchange / policyPrefix). */
export const DEFAULT_DEAD_LETTER_EXCHANGE = 'dlx';
export const DEFAULT_POLICY_PREFIX = 'messaging';

export const dlqName = (queue: string): string => `${queue}.dlq`;

export const retryQueueName = (queue: string, delayMs: number): string => `${queue}.retry.${delayLabel(delayMs)}`;

export const policyName = (prefix: string, queue: string): string => `${prefix}:${queue}`;

/** 1000 → "1s", 120000 → "2m", 250 → "250ms": readable in the management UI. */
export function delayLabel(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

export const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
