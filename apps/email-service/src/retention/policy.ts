import type { ConfigIssue } from '@community/config';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import { longestRedeliveryMs } from '@community/idempotency';
import { DEFAULT_DELIVERY_LIMIT, type QueueSpec } from '@community/messaging';

const DAY_MS = 86_400_000;

/**
 * Room between the retention horizon and the acceptance window, for the clocks: occurredAt is
 * stamped by notification-service's clock, a ledger row's created_at by the database's, and this
 * service compares occurredAt with its own. A day is far beyond any skew NTP leaves.
 */
export const CLOCK_MARGIN_MS = DAY_MS;

/**
 * The settings the policy is computed from, spelled out rather than picked from EmailConfig:
 * config.ts checks its values with this policy, so importing its type back would be a cycle.
 */
interface PolicyConfig {
  EMAIL_RETENTION_DAYS: number;
  SMTP_BREAKER_MAX_HOLD_MS: number;
  EMAIL_LEASE_MS: number;
}

/** The send consumer's deadline: a breaker hold, waiting out a crashed sender's lease, and the send itself. */
export function sendHandlerTimeoutMs(
  config: Pick<PolicyConfig, 'SMTP_BREAKER_MAX_HOLD_MS' | 'EMAIL_LEASE_MS'>,
): number {
  return config.SMTP_BREAKER_MAX_HOLD_MS + 2 * config.EMAIL_LEASE_MS + 30_000;
}

export interface EmailRetentionPolicy {
  /** Finished ledger rows and digest windows older than this are deleted. */
  retentionMs: number;
  /**
   * A notification.created older than this is refused (dead-lettered, never sent): its ledger row
   * or digest item may be gone, and with it the proof that it was already sent. Shorter than the
   * horizon by the clock margin and the handler's own deadline (the claim comes that much after
   * the age check), so an accepted message always still finds its row.
   */
  maxEventAgeMs: number;
  /** The longest time the runtime may still deliver a copy of a healthy message (retries, redeliveries). */
  longestRedeliveryMs: number;
}

/** email-service's queues (the send queue, and any other lane of notification.created). */
const emailQueues = (queues: readonly QueueSpec[]) => queues.filter((q) => q.name.startsWith('email-service.'));

export function emailRetentionPolicy(
  config: PolicyConfig,
  queues: readonly QueueSpec[] = COMMUNITY_TOPOLOGY.queues,
): EmailRetentionPolicy {
  const retentionMs = config.EMAIL_RETENTION_DAYS * DAY_MS;
  const handlerTimeoutMs = sendHandlerTimeoutMs(config);
  const longest = Math.max(
    0,
    ...emailQueues(queues).map((q) =>
      longestRedeliveryMs({
        retryDelaysMs: q.retryDelaysMs,
        deliveryLimit: q.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT,
        handlerTimeoutMs,
      }),
    ),
  );
  return { retentionMs, maxEventAgeMs: retentionMs - CLOCK_MARGIN_MS - handlerTimeoutMs, longestRedeliveryMs: longest };
}

/**
 * The horizon is refused at start when a healthy message could be refused as too old: the
 * acceptance window must outlast every retry and redelivery of email-service's queues. (Digest
 * windows need nothing more: items only ever go to the window containing "now", and a purged
 * window ended a whole horizon ago.)
 */
export function emailRetentionIssues(
  config: PolicyConfig,
  queues: readonly QueueSpec[] = COMMUNITY_TOPOLOGY.queues,
): ConfigIssue[] {
  const policy = emailRetentionPolicy(config, queues);
  const needed = policy.longestRedeliveryMs;
  if (policy.maxEventAgeMs > needed) return [];
  const hours = (ms: number) => `${Math.ceil(ms / 3_600_000)} h`;
  return [
    {
      name: 'EMAIL_RETENTION_DAYS',
      message:
        `EMAIL_RETENTION_DAYS: ${config.EMAIL_RETENTION_DAYS} days leave an acceptance window of ${hours(policy.maxEventAgeMs)} ` +
        `(the horizon less a 24 h clock margin and the send deadline); it must exceed ${hours(needed)}, ` +
        `the longest redelivery of email-service's queues (retry tiers plus every delivery running to the send deadline)`,
    },
  ];
}
