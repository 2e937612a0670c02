/**
 * What a replay dry run warns about: dead letters whose cause a replay does not remove. A replay
 * publishes the same bytes to the same consumer; a message the consumer refused as permanent
 * (libs/messaging `classify`: the error said no retry can fix it) is refused again unless something
 * outside the message changed in between. How sure that is depends on the cause:
 * - `fails-again`: the bytes themselves are the cause. A body that is not JSON (or not UTF-8) can
 *   never parse, and one larger than the consumer's limit is refused before it is read; no deploy
 *   and no data fix changes that. Replaying them only puts them back in the DLQ.
 * - `likely-fails-again`: another ContractError (an unknown type or version, a schema violation)
 *   passes only once a consumer that accepts it is deployed; any other permanent error (a missing
 *   reference after its grace period, a forbidden publisher) only once what it depended on is fixed.
 * Copies dead-lettered after exhausting their retries (transient causes) and the broker's own
 * reasons (delivery limit, overflow) are what a replay is for: no warning.
 * The classification reads what the DLQ row holds: the error class and message recorded by the
 * consumer (DEAD_LETTER_HEADERS), and `error_kind` ('permanent' for the ones classified so).
 */
export type Permanence = 'fails-again' | 'likely-fails-again';

export interface PermanentCause {
  errorClass: string;
  /** One message of the cause, as stored (the normalised text would hide nothing here: it is the class that decides). */
  errorMessage: string;
  count: number;
}

export interface ReplayWarning {
  permanence: Permanence;
  errorClass: string;
  count: number;
  message: string;
}

/**
 * ContractError's MALFORMED_JSON texts (libs/contracts validate.ts): the body is not JSON at all.
 * Written so that JavaScript and PostgreSQL (`~`, store.ts) read it the same way.
 */
export const NOT_JSON_PATTERN = '^Body is not valid (JSON|UTF-8)( |$)';
const NOT_JSON = new RegExp(NOT_JSON_PATTERN);

export function permanenceOf(cause: Pick<PermanentCause, 'errorClass' | 'errorMessage'>): Permanence {
  if (cause.errorClass === 'MessageTooLargeError') return 'fails-again';
  if (cause.errorClass === 'ContractError' && NOT_JSON.test(cause.errorMessage)) return 'fails-again';
  return 'likely-fails-again';
}

/** One warning per cause class and certainty, the surest and largest first. */
export function replayWarnings(causes: readonly PermanentCause[]): ReplayWarning[] {
  const merged = new Map<string, ReplayWarning>();
  for (const c of causes) {
    const permanence = permanenceOf(c);
    const key = `${permanence}\u0000${c.errorClass}`;
    const w = merged.get(key);
    if (w) w.count += c.count;
    else merged.set(key, { permanence, errorClass: c.errorClass, count: c.count, message: '' });
  }
  const rank = (p: Permanence) => (p === 'fails-again' ? 0 : 1);
  return [...merged.values()]
    .sort((a, b) => rank(a.permanence) - rank(b.permanence) || b.count - a.count)
    .map((w) => ({ ...w, message: warningText(w) }));
}

function warningText(w: Omit<ReplayWarning, 'message'>): string {
  const n = `${w.count} message(s) failed with ${w.errorClass}`;
  if (w.permanence === 'fails-again') {
    return w.errorClass === 'MessageTooLargeError'
      ? `${n}: the body is larger than the consumer's limit, and a replay sends the same body: it will fail again and come back to the DLQ. Discard them (the producer must send smaller messages).`
      : `${n}: the body is not valid JSON, and a replay sends the same bytes: it will fail again and come back to the DLQ. Discard them, and fix the producer that wrote them.`;
  }
  if (w.errorClass === 'ContractError') {
    return `${n}, a permanent error: the body breaks the event contract, and a replay sends the same bytes. It fails again unless a consumer that accepts them (a new type or version) has been deployed since.`;
  }
  return `${n}, a permanent error (the handler said no retry can fix it): a replay fails again unless what it needed has been fixed since (a missing record created, a permission granted).`;
}
