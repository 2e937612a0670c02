import { createHash } from 'node:crypto';
import type { ConsumeMessage } from 'amqplib';
import { DEAD_LETTER_HEADERS as H } from '@community/messaging';
import { fingerprintOf } from './fingerprint';

/** What the console stores of one dead-lettered copy. */
export interface DeadLetter {
  queue: string;
  originalQueue: string;
  messageId: string;
  deadLetteredAt: Date;
  properties: Record<string, unknown>;
  headers: Record<string, unknown>;
  body: Buffer;
  routingKey: string | null;
  messageType: string | null;
  errorClass: string;
  errorMessage: string;
  errorKind: string;
  handler: string | null;
  attempts: number;
  fingerprint: string;
  normalized: string;
}

const str = (v: unknown): string | null =>
  typeof v === 'string' && v.length > 0 ? v : Buffer.isBuffer(v) ? v.toString('utf8') : null;
const num = (v: unknown): number => {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : 0;
};

/** An AMQP timestamp as amqplib decodes it (seconds), or the `{ '!': 'timestamp', value }` form. */
function amqpTime(v: unknown): Date | null {
  const seconds =
    typeof v === 'number'
      ? v
      : typeof v === 'object' && v !== null && 'value' in v
        ? num((v as { value: unknown }).value)
        : NaN;
  return Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : null;
}

function isoTime(v: unknown): Date | null {
  const s = str(v);
  if (!s) return null;
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? null : d;
}

interface XDeath {
  queue?: unknown;
  reason?: unknown;
  count?: unknown;
  time?: unknown;
  'routing-keys'?: unknown;
}

/** The envelope's `type`, when the body is a JSON envelope. Never throws: a DLQ holds garbage too. */
function envelopeType(body: Buffer): string | null {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { type?: unknown };
    return typeof parsed?.type === 'string' ? parsed.type : null;
  } catch {
    return null;
  }
}

/**
 * Reads a DLQ delivery. Two kinds of copies arrive:
 * - dead-lettered by our consumers (libs/messaging `failureHeaders`): DEAD_LETTER_HEADERS say it all;
 * - dead-lettered by the broker (delivery limit, max-length overflow) through the DLX: only
 *   `x-death` says where it came from and why; the error is the broker's reason.
 * Total: whatever arrives becomes a row, so nothing is stuck in a DLQ the console cannot show.
 */
export function readDeadLetter(
  dlq: string,
  msg: Pick<ConsumeMessage, 'content' | 'properties' | 'fields'>,
  now: Date = new Date(),
): DeadLetter {
  const p = msg.properties;
  const headers: Record<string, unknown> = { ...(p.headers ?? {}) };
  const deaths = Array.isArray(headers['x-death']) ? (headers['x-death'] as XDeath[]) : [];
  const death = deaths[0];
  const consumerErrorClass = str(headers[H.errorClass]);

  const originalQueue =
    str(headers[H.originalQueue]) ?? str(death?.queue) ?? (dlq.endsWith('.dlq') ? dlq.slice(0, -'.dlq'.length) : dlq);
  const deadLetteredAt = isoTime(headers[H.deadLetteredAt]) ?? amqpTime(death?.time) ?? amqpTime(p.timestamp) ?? now;
  const messageId = str(p.messageId) ?? `sha256:${createHash('sha256').update(msg.content).digest('hex').slice(0, 32)}`;

  let errorClass: string;
  let errorMessage: string;
  let errorKind: string;
  if (consumerErrorClass !== null) {
    errorClass = consumerErrorClass;
    errorMessage = str(headers[H.errorMessage]) ?? '';
    errorKind = str(headers[H.errorKind]) ?? 'permanent';
  } else if (death) {
    const reason = str(death.reason) ?? 'unknown';
    errorClass = `broker:${reason}`;
    // The last error our consumer saw before the broker gave up, when it recorded one.
    errorMessage = str(headers[H.lastErrorMessage]) ?? `dead-lettered by the broker (${reason}) from ${originalQueue}`;
    errorKind = reason;
  } else {
    errorClass = 'unknown';
    errorMessage = 'no dead-letter headers (published to the DLQ directly?)';
    errorKind = 'unknown';
  }
  const handler = str(headers[H.handler]);
  const messageType = str(p.type) ?? envelopeType(msg.content);
  const attempts = num(headers[H.attempts]) || num(death?.count) || num(headers[H.retryAttempt]);
  const routingKey =
    str(headers[H.originalRoutingKey]) ??
    (Array.isArray(death?.['routing-keys']) ? str((death['routing-keys'] as unknown[])[0]) : null) ??
    str(msg.fields.routingKey);
  const { fingerprint, normalized } = fingerprintOf({ errorClass, errorMessage, handler, messageType });

  const properties: Record<string, unknown> = {};
  for (const key of [
    'contentType',
    'contentEncoding',
    'correlationId',
    'type',
    'timestamp',
    'appId',
    'priority',
    'replyTo',
    'userId',
  ] as const) {
    const v = p[key];
    if (v !== undefined && v !== null) properties[key] = v;
  }

  // Every text goes to a text or jsonb column: made storable here, so the insert cannot fail the
  // same way at every redelivery (the body is bytea and is kept exactly).
  return {
    queue: storableText(dlq),
    originalQueue: storableText(originalQueue),
    messageId: storableText(messageId),
    deadLetteredAt: storableTime(deadLetteredAt, now),
    properties: storableJson(jsonSafe(properties)) as Record<string, unknown>,
    headers: storableJson(jsonSafe(headers)) as Record<string, unknown>,
    body: msg.content,
    routingKey: routingKey === null ? null : storableText(routingKey),
    messageType: messageType === null ? null : storableText(messageType),
    errorClass: storableText(errorClass.slice(0, 200)),
    errorMessage: storableText(errorMessage.slice(0, 2000)),
    errorKind: storableText(errorKind),
    handler: handler === null ? null : storableText(handler),
    attempts: Math.max(-INT4_MAX, Math.min(INT4_MAX, Math.trunc(attempts))),
    fingerprint,
    normalized: storableText(normalized),
  };
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `attempts` is an int4 column. */
const INT4_MAX = 2 ** 31 - 1;

/**
 * What PostgreSQL's text and jsonb accept of a string: no NUL (text refuses the byte, jsonb the
 * \u0000 escape) and no lone surrogate (not encodable as UTF-8); both become U+FFFD, the
 * replacement character, so the operator still sees where something was.
 */
export function storableText(s: string): string {
  return s.replaceAll('\u0000', '\uFFFD').replace(LONE_SURROGATE, '\uFFFD');
}

function storableJson(v: unknown): unknown {
  if (typeof v === 'string') return storableText(v);
  if (Array.isArray(v)) return v.map(storableJson);
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [storableText(k), storableJson(x)]));
  // NaN and ±Infinity have no JSON form (JSON.stringify writes null): kept as text.
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  return v;
}

/** timestamptz covers 4713 BC to 294276 AD; a header naming a time outside it means "unknown". */
function storableTime(d: Date, now: Date): Date {
  const year = d.getUTCFullYear();
  return year >= 1 && year <= 9999 ? d : now;
}

/** AMQP header values as JSON (Buffers as text, bigints as strings). */
function jsonSafe(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonSafe(x)]));
  return v;
}

/**
 * Headers a replayed copy must not carry: the broker's and the runtime's retry history. With them,
 * the runtime would count the replay as attempt n+1 and send it straight back to the DLQ at its first
 * transient failure (libs/messaging `attemptOf`). Everything else (trace context, the producer's own
 * headers) is kept as it was.
 */
export const HISTORY_HEADERS: readonly string[] = [
  'x-death',
  'x-delivery-count',
  'x-first-death-exchange',
  'x-first-death-queue',
  'x-first-death-reason',
  'x-last-death-exchange',
  'x-last-death-queue',
  'x-last-death-reason',
  ...Object.values(H),
];

export function replayHeaders(
  stored: Record<string, unknown>,
  operationId: string,
  replayCount: number,
): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(stored)) if (!HISTORY_HEADERS.includes(k)) headers[k] = v;
  headers['x-replay-operation'] = operationId;
  headers['x-replay-count'] = replayCount;
  // Kept for whoever reads the replayed copy (and for the console, should it come back).
  headers['x-replayed-error-class'] = stored[H.errorClass] ?? stored[H.lastErrorClass] ?? null;
  return headers;
}
