import { SmtpTransientError } from '../smtp/errors';
import type { Lease } from '../store/ledger';
import {
  isFinal,
  next,
  startDelivery,
  type DeliveryState,
  type DeliveryStep,
  type StepResult,
} from './immediate-delivery';

const OPEN = { breakerOpen: true };
const CLOSED = { breakerOpen: false };
const lease: Lease = { id: '1', token: 't', attempts: 1, messageId: '<m@x>' };
const failure = new SmtpTransientError('451 try later');

const at = (step: DeliveryStep, over: Partial<DeliveryState> = {}): DeliveryState => ({
  step,
  mutable: true,
  pollMs: 100,
  ...over,
});
const claimLost = (state: 'sending' | 'sent' | 'suppressed' | undefined, msUntilLeaseExpiry = 0): StepResult => ({
  kind: 'claim',
  claim: { claimed: false, state, msUntilLeaseExpiry },
});

describe('start', () => {
  it('holds while the breaker is open', () => {
    expect(startDelivery(true, OPEN).step).toEqual({ kind: 'hold' });
    expect(startDelivery(false, OPEN).step).toEqual({ kind: 'hold' });
  });

  it('checks opt-outs first, except for a type that cannot be muted, which claims at once', () => {
    expect(startDelivery(true, CLOSED)).toEqual({ step: { kind: 'check-opt-out' }, mutable: true, pollMs: 100 });
    expect(startDelivery(false, CLOSED)).toEqual({ step: { kind: 'claim' }, mutable: false, pollMs: 100 });
  });
});

describe('transitions', () => {
  it('hold → check-opt-out, or claim for a security alert', () => {
    expect(next(at({ kind: 'hold' }), { kind: 'hold' }, CLOSED).step).toEqual({ kind: 'check-opt-out' });
    expect(next(at({ kind: 'hold' }, { mutable: false }), { kind: 'hold' }, CLOSED).step).toEqual({ kind: 'claim' });
  });

  it('check-opt-out → suppress when opted out, else claim', () => {
    expect(next(at({ kind: 'check-opt-out' }), { kind: 'check-opt-out', optedOut: true }, CLOSED).step).toEqual({
      kind: 'suppress',
    });
    expect(next(at({ kind: 'check-opt-out' }), { kind: 'check-opt-out', optedOut: false }, CLOSED).step).toEqual({
      kind: 'claim',
    });
  });

  it('suppress → done (skipped)', () => {
    expect(next(at({ kind: 'suppress' }), { kind: 'suppress' }, CLOSED).step).toEqual({
      kind: 'done',
      outcome: 'skipped',
    });
  });

  it('claim → send under the lease it won', () => {
    expect(next(at({ kind: 'claim' }), { kind: 'claim', claim: { claimed: true, lease } }, CLOSED).step).toEqual({
      kind: 'send',
      lease,
    });
  });

  it('claim → done (duplicate) when the row is sent or suppressed already: no second email', () => {
    for (const state of ['sent', 'suppressed', undefined] as const) {
      expect(next(at({ kind: 'claim' }), claimLost(state), CLOSED).step).toEqual({
        kind: 'done',
        outcome: 'duplicate',
      });
    }
  });

  it('claim → wait-lease while another delivery sends: 100 ms doubling to 2 s, never past the lease expiry', () => {
    let state = at({ kind: 'claim' });
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) {
      state = next(state, claimLost('sending', 60_000), CLOSED);
      if (state.step.kind !== 'wait-lease') throw new Error(`expected wait-lease, got ${state.step.kind}`);
      waits.push(state.step.ms);
      state = { ...state, step: { kind: 'claim' } };
    }
    expect(waits).toEqual([100, 200, 400, 800, 1600, 2000, 2000]);
    // A lease about to expire: wake just after it, so the next claim takes it over.
    expect(next(at({ kind: 'claim' }, { pollMs: 2000 }), claimLost('sending', 35), CLOSED).step).toEqual({
      kind: 'wait-lease',
      ms: 45,
    });
  });

  it('wait-lease → back to the top: hold if the breaker opened meanwhile, else opt-outs or claim', () => {
    expect(next(at({ kind: 'wait-lease', ms: 100 }), { kind: 'wait-lease' }, OPEN).step).toEqual({ kind: 'hold' });
    expect(next(at({ kind: 'wait-lease', ms: 100 }), { kind: 'wait-lease' }, CLOSED).step).toEqual({
      kind: 'check-opt-out',
    });
    expect(next(at({ kind: 'wait-lease', ms: 100 }, { mutable: false }), { kind: 'wait-lease' }, CLOSED).step).toEqual({
      kind: 'claim',
    });
  });

  it('send → done (processed) on a 250', () => {
    expect(next(at({ kind: 'send', lease }), { kind: 'send', result: { outcome: 'sent' } }, CLOSED).step).toEqual({
      kind: 'done',
      outcome: 'processed',
    });
  });

  it('send → release on a transient failure, keeping the lease and the error', () => {
    const step = next(
      at({ kind: 'send', lease }),
      { kind: 'send', result: { outcome: 'transient', error: failure } },
      OPEN,
    ).step;
    expect(step).toEqual({ kind: 'release', lease, error: failure });
  });

  it('release → fail (a retry tier) while the breaker is closed', () => {
    expect(next(at({ kind: 'release', lease, error: failure }), { kind: 'release' }, CLOSED).step).toEqual({
      kind: 'fail',
      error: failure,
    });
  });

  it('release → hold when the breaker is open: the outage costs no retry attempt', () => {
    expect(next(at({ kind: 'release', lease, error: failure }), { kind: 'release' }, OPEN).step).toEqual({
      kind: 'hold',
      after: '451 try later',
    });
  });

  it('refuses a result that does not belong to the current step', () => {
    expect(() => next(at({ kind: 'claim' }), { kind: 'release' }, CLOSED)).toThrow(
      "a 'release' result cannot follow the 'claim' step",
    );
    expect(() => next(at({ kind: 'done', outcome: 'processed' }), { kind: 'hold' }, CLOSED)).toThrow(
      "cannot follow the 'done' step",
    );
  });
});

it('a whole delivery: held through an outage, waits out a duplicate sender, then sends', () => {
  const results: Array<[StepResult, { breakerOpen: boolean }]> = [
    [{ kind: 'hold' }, CLOSED],
    [{ kind: 'check-opt-out', optedOut: false }, CLOSED],
    [claimLost('sending', 5_000), CLOSED],
    [{ kind: 'wait-lease' }, CLOSED],
    [{ kind: 'check-opt-out', optedOut: false }, CLOSED],
    [{ kind: 'claim', claim: { claimed: true, lease } }, CLOSED],
    [{ kind: 'send', result: { outcome: 'transient', error: failure } }, OPEN],
    [{ kind: 'release' }, OPEN],
    [{ kind: 'hold' }, CLOSED],
    [{ kind: 'check-opt-out', optedOut: false }, CLOSED],
    [{ kind: 'claim', claim: { claimed: true, lease } }, CLOSED],
    [{ kind: 'send', result: { outcome: 'sent' } }, CLOSED],
  ];
  let state = startDelivery(true, OPEN);
  const kinds = [state.step.kind];
  for (const [result, facts] of results) {
    expect(isFinal(state.step)).toBe(false);
    state = next(state, result, facts);
    kinds.push(state.step.kind);
  }
  expect(kinds).toEqual([
    'hold',
    'check-opt-out',
    'claim',
    'wait-lease',
    'check-opt-out',
    'claim',
    'send',
    'release',
    'hold',
    'check-opt-out',
    'claim',
    'send',
    'done',
  ]);
  expect(state.step).toEqual({ kind: 'done', outcome: 'processed' });
});
