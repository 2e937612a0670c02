import type { MessageProperties } from 'amqplib';
import { PermanentError } from '../../errors';
import { DELIVERY, type RuntimeContext } from '../delivery';
import type { Handler } from '../types';

// Parameters such as `; charset=utf-8` are allowed; `application/jsonx` is not JSON.
const JSON_CONTENT_TYPE = /^application\/json\s*(?:;.*)?$/i;

/**
 * The AMQP properties the contract requires of every message, checked before the body: a
 * `messageId` (the event id, which logs, the DLQ console and dedup rely on) and a JSON content
 * type. A message that lacks them is a producer bug that no retry can fix: dead-lettered at once.
 * A missing content type is accepted (the body is validated as JSON anyway); a different one is not,
 * or a body some producer meant as another format would be read as an event by accident.
 */
export function checkMessageProperties(properties: Pick<MessageProperties, 'messageId' | 'contentType'>): void {
  const { messageId, contentType } = properties;
  if (messageId === undefined || messageId === null || String(messageId).trim() === '') {
    throw new PermanentError('message has no messageId (the contract sets it to the event id)', 'MISSING_MESSAGE_ID');
  }
  if (contentType !== undefined && contentType !== null && !JSON_CONTENT_TYPE.test(String(contentType))) {
    throw new PermanentError(
      `unsupported content type '${String(contentType).slice(0, 100)}' (expected application/json)`,
      'UNSUPPORTED_CONTENT_TYPE',
    );
  }
}

/** The pipeline step: the delivery's properties, before its body is read (outside validation). */
export function messageProperties<C extends RuntimeContext>(): (next: Handler<Buffer, C>) => Handler<Buffer, C> {
  return (next) => async (body, ctx) => {
    checkMessageProperties(ctx[DELIVERY].msg.properties);
    return next(body, ctx);
  };
}
