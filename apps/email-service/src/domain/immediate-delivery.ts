import type { AttemptResult } from '../delivery/attempt';
import type { ClaimResult, Lease } from '../store/ledger';
import type { SmtpTransientError } from '../smtp/errors';

/**
 * The rules of sending one immediate email, as a state machine with no I/O. The driver
 * (delivery/immediate.ts) performs each step's effect and feeds the result back through `next`;
 * everything decided here is unit-tested step by step.
 *
 *              ┌──────────────────── breaker open ───────────────────────┐
 *              ▼                                                         │
 *   start ─► hold ─► check-opt-out ─opted out─► suppress ─► done(skipped)│
 *     │        ▲          │ (security alerts skip it: they cannot be muted)
 *     └────────┼──────────┴─────────────► claim ─sent/suppressed already─► done(duplicate)
 *              │                          │  ▲ └─another sender holds it─► wait-lease ─► (top)
 *              │                          ▼  │
 *              │                         send ─250─► done(processed)
 *              │                          │ (a 5xx is thrown by the send itself: row failed, DLQ)
 *              │                          └─transient─► release ─breaker closed─► fail(error)
 *              └──────────────── breaker open (hold the message, no retry spent) ─┘
 *
 * "(top)" is where every pass starts: hold while the breaker is open (the outage costs no retry
 * attempt), else check opt-outs, else claim. Opt-outs are checked on each pass because a long hold
 * or a wait on another sender's lease can outlast the user's unsubscribe.
 */

export type DeliveryStep =
  /** Record the row as pending (visible while held), then wait for the breaker to close. */
  | { kind: 'hold'; after?: string }
  /** Has the user opted out since notification-service decided this email? */
  | { kind: 'check-opt-out' }
  /** Record the email as suppressed. */
  | { kind: 'suppress' }
  /** Claim the ledger row under a lease (created in `sending`, or taken over). */
  | { kind: 'claim' }
  /** Another delivery of this key holds a live lease: wait, then look again. */
  | { kind: 'wait-lease'; ms: number }
  /** One SMTP attempt under the lease. */
  | { kind: 'send'; lease: Lease }
  /** Put the row back to pending after a transient failure. */
  | { kind: 'release'; lease: Lease; error: SmtpTransientError }
  | { kind: 'done'; outcome: 'processed' | 'skipped' | 'duplicate' }
  /** Give the message back to the runtime (retry tier). */
  | { kind: 'fail'; error: Error };

export interface DeliveryState {
  step: DeliveryStep;
  /** False for security alerts: they cannot be muted, so opt-outs are never consulted. */
  mutable: boolean;
  /** Next wait on another sender's lease: 100 ms, doubling, at most 2 s. */
  pollMs: number;
}

/** What the driver observed performing the current step (one variant per effectful step). */
export type StepResult =
  | { kind: 'hold' }
  | { kind: 'check-opt-out'; optedOut: boolean }
  | { kind: 'suppress' }
  | { kind: 'claim'; claim: ClaimResult }
  | { kind: 'wait-lease' }
  | { kind: 'send'; result: AttemptResult }
  | { kind: 'release' };

/** Facts sampled by the driver after each effect. */
export interface Facts {
  breakerOpen: boolean;
}

const FIRST_POLL_MS = 100;
const MAX_POLL_MS = 2_000;
/** Wake a little after the other lease expires, so the next claim can take it over. */
const LEASE_EXPIRY_MARGIN_MS = 10;

export function startDelivery(mutable: boolean, facts: Facts): DeliveryState {
  return top({ step: { kind: 'claim' }, mutable, pollMs: FIRST_POLL_MS }, facts);
}

/** The start of every pass (see the diagram). */
function top(state: DeliveryState, facts: Facts, after?: string): DeliveryState {
  if (facts.breakerOpen) return { ...state, step: after === undefined ? { kind: 'hold' } : { kind: 'hold', after } };
  return afterHold(state);
}

function afterHold(state: DeliveryState): DeliveryState {
  return { ...state, step: state.mutable ? { kind: 'check-opt-out' } : { kind: 'claim' } };
}

export function isFinal(step: DeliveryStep): step is Extract<DeliveryStep, { kind: 'done' | 'fail' }> {
  return step.kind === 'done' || step.kind === 'fail';
}

type ResultOf<K extends StepResult['kind']> = Extract<StepResult, { kind: K }>;

/** The transition function: the state after the current step's effect produced `result`. */
export function next(state: DeliveryState, result: StepResult, facts: Facts): DeliveryState {
  const { step } = state;
  if (result.kind !== step.kind)
    throw new Error(`delivery state machine: a '${result.kind}' result cannot follow the '${step.kind}' step`);
  switch (step.kind) {
    case 'hold':
      // The breaker closed (a wait that ended in failure threw instead: BreakerOpenError, transient).
      return afterHold(state);
    case 'check-opt-out':
      return {
        ...state,
        step: (result as ResultOf<'check-opt-out'>).optedOut ? { kind: 'suppress' } : { kind: 'claim' },
      };
    case 'suppress':
      return { ...state, step: { kind: 'done', outcome: 'skipped' } };
    case 'claim': {
      const { claim } = result as ResultOf<'claim'>;
      if (claim.claimed) return { ...state, step: { kind: 'send', lease: claim.lease } };
      // Sent or suppressed already: this delivery is a duplicate, and no second email goes out.
      if (claim.state !== 'sending') return { ...state, step: { kind: 'done', outcome: 'duplicate' } };
      // Another delivery of this key is sending (a concurrent duplicate), or crashed mid-send and
      // its lease has not expired yet: poll until it settles or the lease can be taken over.
      const ms = Math.min(state.pollMs, claim.msUntilLeaseExpiry + LEASE_EXPIRY_MARGIN_MS);
      return { ...state, step: { kind: 'wait-lease', ms }, pollMs: Math.min(state.pollMs * 2, MAX_POLL_MS) };
    }
    case 'wait-lease':
      return top(state, facts);
    case 'send': {
      const attempt = (result as ResultOf<'send'>).result;
      if (attempt.outcome === 'sent') return { ...state, step: { kind: 'done', outcome: 'processed' } };
      return { ...state, step: { kind: 'release', lease: step.lease, error: attempt.error } };
    }
    case 'release':
      // If that failure opened the breaker (or it was open already), hold the message and try again
      // once it closes, so the outage costs no retry attempt; otherwise take a retry tier.
      if (!facts.breakerOpen) return { ...state, step: { kind: 'fail', error: step.error } };
      return top(state, facts, step.error.message);
  }
}
