import type { MessageContext, Handler } from '../types';

/**
 * Turns the body into an event before anything else sees it. The validator must throw a permanent
 * error for bad input: redelivering the same bytes can never make them valid, so the failure
 * routing around this dead-letters them at once. This is the one stage that changes the event's
 * type (bytes in, `E` out), which is why it is not a `Middleware<E>`.
 */
export function validation<E, C extends MessageContext>(
  validate: (body: Buffer) => E,
): (next: Handler<E, C>) => Handler<Buffer, C> {
  return (next) => async (body, ctx) => next(validate(body), ctx);
}
