import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * email-service's own series (the messaging runtime adds messaging_*). Base units, bounded labels:
 * channel (immediate|digest), outcome, reason (a fixed vocabulary), never ids or addresses.
 */
export interface EmailMetrics {
  decisions: Counter<'decision'>;
  sends: Counter<'channel' | 'outcome' | 'provider'>;
  sendDuration: Histogram<'channel'>;
  rateLimitWait: Histogram;
  rateLimitPermits: Counter<'priority'>;
  rateLimitWaiting: Gauge<'priority'>;
  rateLimitPerSecond: Gauge;
  undeliverable: Counter<'reason'>;
  breakerOpen: Gauge;
  leaseTakeovers: Counter<'reason'>;
  deadHolderLeases: Gauge;
  breakerTransitions: Counter<'to'>;
  breakerProbes: Counter<'provider' | 'outcome'>;
  breakerHeld: Gauge;
  providerBreakerOpen: Gauge<'provider'>;
  providerBreakerTransitions: Counter<'provider' | 'to'>;
  digestWindows: Counter<'outcome'>;
  suppressionSyncs: Counter<'outcome'>;
  held: Counter<'reason'>;
  readChecks: Counter<'outcome'>;
}

const cache = new WeakMap<Registry, EmailMetrics>();

export function emailMetrics(registry: Registry): EmailMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const m: EmailMetrics = {
    decisions: new Counter({
      name: 'email_decisions_total',
      help: 'notification.created events by decision (immediate, digest, off, suppressed)',
      labelNames: ['decision'],
      registers,
    }),
    sends: new Counter({
      name: 'email_sends_total',
      help: 'SMTP send attempts by channel, outcome (sent, transient, permanent, aborted) and provider (primary, fallback)',
      labelNames: ['channel', 'outcome', 'provider'],
      registers,
    }),
    sendDuration: new Histogram({
      name: 'email_smtp_send_duration_seconds',
      help: 'Time of one SMTP send (pool queue + exchange), excluding the rate-limit wait',
      labelNames: ['channel'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    rateLimitWait: new Histogram({
      name: 'email_rate_limit_wait_seconds',
      help: 'Time a send waited for the provider rate limit',
      buckets: [0, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    rateLimitPermits: new Counter({
      name: 'email_rate_limit_permits_total',
      help: 'Sends the provider rate limiter let through, by priority (critical, regular)',
      labelNames: ['priority'],
      registers,
    }),
    rateLimitWaiting: new Gauge({
      name: 'email_rate_limit_waiting',
      help: 'Sends waiting for a rate-limit slot, by priority (critical, regular)',
      labelNames: ['priority'],
      registers,
    }),
    rateLimitPerSecond: new Gauge({
      name: 'email_smtp_rate_limit_per_second',
      help: 'Configured SMTP sends per second (SMTP_RATE_PER_SECOND, 0 = unlimited): the ceiling of the email queues drain rate',
      registers,
    }),
    undeliverable: new Counter({
      name: 'email_undeliverable_total',
      help: 'Emails recorded as failed without an SMTP attempt (no_address, unknown_user)',
      labelNames: ['reason'],
      registers,
    }),
    leaseTakeovers: new Counter({
      name: 'email_lease_takeovers_total',
      help: "Immediate deliveries claimed from another sender's lease, by reason (holder_dead, lease_expired)",
      labelNames: ['reason'],
      registers,
    }),
    deadHolderLeases: new Gauge({
      name: 'email_dead_holder_leases',
      help: 'Deliveries in sending under the lease of a dead process, not taken over yet',
      registers,
    }),
    breakerOpen: new Gauge({
      name: 'email_smtp_breaker_open',
      help: '1 while the SMTP circuit breaker is open (email queues paused); with a fallback provider, while every provider breaker is open',
      registers,
    }),
    breakerTransitions: new Counter({
      name: 'email_smtp_breaker_transitions_total',
      help: 'Circuit breaker state changes (of the email queues: with a fallback provider, every provider open and back)',
      labelNames: ['to'],
      registers,
    }),
    breakerProbes: new Counter({
      name: 'email_smtp_breaker_probes_total',
      help: 'SMTP probes while a provider breaker is open, by provider and outcome',
      labelNames: ['provider', 'outcome'],
      registers,
    }),
    breakerHeld: new Gauge({
      name: 'email_smtp_breaker_held_messages',
      help: 'In-flight messages waiting for a breaker to close (any provider, or the one their earlier attempt is bound to)',
      registers,
    }),
    providerBreakerOpen: new Gauge({
      name: 'email_smtp_provider_breaker_open',
      help: "1 while this provider's circuit breaker is open (only with SMTP_FALLBACK_URL set: new sends go to the other provider)",
      labelNames: ['provider'],
      registers,
    }),
    providerBreakerTransitions: new Counter({
      name: 'email_smtp_provider_breaker_transitions_total',
      help: "A provider circuit breaker's state changes (only with SMTP_FALLBACK_URL set)",
      labelNames: ['provider', 'to'],
      registers,
    }),
    digestWindows: new Counter({
      name: 'email_digest_windows_total',
      help: 'Digest windows flushed, by outcome (flushed, empty)',
      labelNames: ['outcome'],
      registers,
    }),
    suppressionSyncs: new Counter({
      name: 'email_suppression_syncs_total',
      help: 'Opt-outs pushed to notification-service preferences, by outcome',
      labelNames: ['outcome'],
      registers,
    }),
    held: new Counter({
      name: 'email_held_total',
      help: 'Immediate emails held in the ledger before sending, by reason (quiet_hours, read_check)',
      labelNames: ['reason'],
      registers,
    }),
    readChecks: new Counter({
      name: 'email_read_checks_total',
      help: 'Held emails checked against the in-app read state when due, by outcome (unread: sent, read: not sent, failed: the check failed and the email was sent anyway)',
      labelNames: ['outcome'],
      registers,
    }),
  };
  cache.set(registry, m);
  return m;
}
