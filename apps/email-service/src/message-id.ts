import { createHash } from 'node:crypto';

/**
 * The Message-ID of an email is a function of its ledger identity (channel, idempotency key), not
 * random: a re-attempt after a crash in the duplicate window (docs/EMAIL.md) carries the same
 * Message-ID as the first attempt, so a receiving server or mail client that deduplicates by
 * Message-ID shows the user one email. Hashed, so the key (which contains ids) is not exposed.
 */
export function messageIdFor(channel: 'immediate' | 'digest', idempotencyKey: string, domain: string): string {
  const digest = createHash('sha256').update(`${channel}\u0000${idempotencyKey}`).digest('hex').slice(0, 40);
  return `<${digest}.${channel}@${domain}>`;
}

/** The domain of the From address (`Community <notifications@community.local>` → community.local). */
export function messageIdDomain(from: string): string {
  const match = /@([A-Za-z0-9.-]+)>?\s*$/.exec(from.trim());
  return match ? match[1].toLowerCase() : 'email-service.local';
}
