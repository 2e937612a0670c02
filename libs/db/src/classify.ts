import type { ErrorClassifier } from '@community/messaging';
import { sqlState } from './errors';

// PostgreSQL SQLSTATE classes: 22 data exception and 23 integrity violation will fail the same
// way every time; 08 connection, 40 serialization/deadlock, 53 resources, 57 operator
// intervention, 58 system error are about the moment, not the message. Class 42 (undefined
// table/column) is left transient on purpose: during a rolling deploy it is about the moment too.
const PERMANENT_CLASSES = new Set(['22', '23']);
const TRANSIENT_CLASSES = new Set(['08', '40', '53', '57', '58']);

/**
 * Retry or dead-letter for a PostgreSQL error, by SQLSTATE class (never by message text).
 * Register it with `createMessaging({ classifiers: [classifyPgError] })` in every service that
 * handles messages against Postgres.
 */
export const classifyPgError: ErrorClassifier = (err) => {
  const state = sqlState(err);
  if (state === undefined) return undefined;
  const cls = state.slice(0, 2);
  if (PERMANENT_CLASSES.has(cls)) return 'permanent';
  if (TRANSIENT_CLASSES.has(cls)) return 'transient';
  return undefined;
};

/**
 * SQLSTATEs that mean "the database cannot serve you right now", whatever the statement: class 08
 * (connection exception), 57P01 admin shutdown (pg_terminate_backend, a fast shutdown), 57P02 crash
 * shutdown, 57P03 cannot connect now (starting up or shutting down), 53300 too many connections.
 * Not the rest of class 57 (57014 is a statement timeout or cancel: ours, not the server's outage).
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

/**
 * node-postgres reports a lost or unobtainable connection with plain errors that carry no code, so
 * these few are known by their text (pg's own, not the server's localised messages): a socket
 * closed under a client, a pool that could not connect within connectionTimeoutMillis, a query on
 * a client that has already failed.
 */
const UNAVAILABLE_MESSAGES = [
  'Connection terminated unexpectedly',
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
];
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * 'database' when `err` means PostgreSQL is unavailable for the moment (restarting, unreachable,
 * our backend terminated, out of connections), else undefined. Pass it to buildServer's
 * `dependencyErrors` so such a request is answered 503 with Retry-After, not 500.
 */
export function pgUnavailable(err: unknown): 'database' | undefined {
  if (err === null || typeof err !== 'object') return undefined;
  const state = sqlState(err);
  if (state !== undefined) return state.startsWith('08') || UNAVAILABLE_STATES.has(state) ? 'database' : undefined;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && SOCKET_CODES.has(code)) return 'database';
  if (
    typeof message === 'string' &&
    UNAVAILABLE_MESSAGES.some((m) => message === m || message.startsWith(`${m}:`) || message.startsWith(`${m} `))
  )
    return 'database';
  return undefined;
}
