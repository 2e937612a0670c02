export type ContractErrorCode = 'MALFORMED_JSON' | 'UNKNOWN_TYPE' | 'UNSUPPORTED_VERSION' | 'SCHEMA_VIOLATION';

export interface ContractErrorDetails {
  /** Event type, when the message got far enough to have one. */
  eventType?: string;
  /** Event id, when the message has a string one (helps find the original in logs). */
  eventId?: string;
  cause?: unknown;
}

/**
 * A message that breaks the contract. Always permanent: redelivering the same bytes can never
 * make them valid, so consumers dead-letter it at once instead of retrying (the messaging runtime
 * checks `err.permanent === true`, by property rather than `instanceof`, so that two copies of this
 * library in one process still agree).
 */
export class ContractError extends Error {
  override readonly name = 'ContractError';
  readonly permanent = true as const;
  readonly code: ContractErrorCode;
  /** JSON pointer into the message body, e.g. `/data/mentionedUserId`; `''` is the whole body. */
  readonly path: string;
  /** What is wrong at `path`, e.g. `Expected required property`. */
  readonly reason: string;
  readonly eventType?: string;
  readonly eventId?: string;

  constructor(code: ContractErrorCode, path: string, reason: string, details: ContractErrorDetails = {}) {
    super(
      path === '' ? reason : `${path}: ${reason}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.code = code;
    this.path = path;
    this.reason = reason;
    if (details.eventType !== undefined) this.eventType = details.eventType;
    if (details.eventId !== undefined) this.eventId = details.eventId;
  }
}
