/**
 * Failures are classified by type, never by message text. `classify()` is the one place that
 * decides between "retry later" and "dead-letter now"; the owners of other error types (a database
 * driver, an SMTP client) plug in an `ErrorClassifier`.
 */

/** No retry can fix this (invalid payload, unknown version, missing reference after grace). */
export class PermanentError extends Error {
  override name = 'PermanentError';
  readonly permanent = true;
  constructor(
    message: string,
    readonly code = 'PERMANENT',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Worth trying again later (a dependency is slow or down, a lock is busy). */
export class TransientError extends Error {
  override name = 'TransientError';
  readonly transient = true;
  constructor(
    message: string,
    readonly code = 'TRANSIENT',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The handler ran past its deadline (the visibility-timeout analogue): transient. */
export class HandlerTimeoutError extends TransientError {
  override name = 'HandlerTimeoutError';
  constructor(timeoutMs: number) {
    super(`handler did not finish within ${timeoutMs} ms`, 'HANDLER_TIMEOUT');
  }
}

/** A mandatory publish that no queue was bound to receive. */
export class UnroutableError extends Error {
  override name = 'UnroutableError';
  constructor(
    readonly exchange: string,
    readonly routingKey: string,
    readonly replyText: string,
  ) {
    super(`unroutable: no queue bound to "${exchange}" for routing key "${routingKey}" (${replyText})`);
  }
}

/** No broker confirm arrived within the publish timeout. The message may or may not have been stored. */
export class PublishTimeoutError extends Error {
  override name = 'PublishTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`no publisher confirm within ${timeoutMs} ms`);
  }
}

/** The broker refused the message (basic.nack), e.g. a full queue with overflow=reject-publish. */
export class PublishRejectedError extends Error {
  override name = 'PublishRejectedError';
  constructor(
    readonly exchange: string,
    readonly routingKey: string,
  ) {
    super(`broker nacked the publish to "${exchange}" with routing key "${routingKey}"`);
  }
}

export type FailureKind = 'permanent' | 'transient';

/**
 * Decides for the error types one owner knows (Postgres SQLSTATEs in libs/db, SMTP replies in
 * email-service), and returns undefined for everything else. The runtime knows no driver: each owner
 * registers its classifier with `createMessaging({ classifiers })`.
 */
export type ErrorClassifier = (err: unknown) => FailureKind | undefined;

/**
 * Retry later or dead-letter now. In order: the error's own `permanent`/`transient` flag (read as a
 * property, not `instanceof`, so two copies of a library in one process agree), then each classifier
 * in turn, then transient.
 */
export function classify(err: unknown, classifiers: readonly ErrorClassifier[] = []): FailureKind {
  if (err && typeof err === 'object') {
    const e = err as { permanent?: unknown; transient?: unknown };
    if (e.permanent === true) return 'permanent';
    if (e.transient === true) return 'transient';
  }
  for (const classifier of classifiers) {
    const kind = classifier(err);
    if (kind !== undefined) return kind;
  }
  // Unknown errors (network resets, bugs) are retried: the tiers are bounded and end in the DLQ,
  // where a bug is visible with its message instead of silently dropped.
  return 'transient';
}

/** Error class name for headers and metrics labels (bounded: class names, not messages). */
export function errorClass(err: unknown): string {
  if (err instanceof Error) return err.name || err.constructor.name || 'Error';
  return typeof err;
}

export function errorMessage(err: unknown, max = 1000): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
