import { MessageTooLargeError, type ProducerPolicy } from '../../identity';
import { DELIVERY, type RuntimeContext } from '../delivery';
import type { Handler, Middleware } from '../types';

/**
 * The consumer's size limit, before anything reads the body: a larger message is dead-lettered
 * (MessageTooLargeError, permanent) unparsed. The broker's own `max_message_size` refuses larger
 * publishes outright; this limit holds where the broker's is higher or unset.
 */
export function messageSize<C extends RuntimeContext>(
  maxBytes: number,
): (next: Handler<Buffer, C>) => Handler<Buffer, C> {
  return (next) => async (body, ctx) => {
    if (body.length > maxBytes) throw new MessageTooLargeError(body.length, maxBytes);
    return next(body, ctx);
  };
}

/**
 * Who published it: the message's type (the event's own `type`, which the handler acts on, else the
 * AMQP `type` property) against the broker user that published it (`user-id`, validated by the
 * broker). A message its publisher may not publish is dead-lettered at once with the reason
 * (ForbiddenPublisherError, permanent): a retry cannot change who published it.
 */
export function publisherCheck<E>(policy: ProducerPolicy): Middleware<E, RuntimeContext> {
  return (next) => async (event, ctx) => {
    const props = ctx[DELIVERY].msg.properties;
    const own = (event as { type?: unknown } | null)?.type;
    const type = typeof own === 'string' ? own : String(props.type ?? 'unknown');
    policy.check(type, props.userId);
    return next(event, ctx);
  };
}
