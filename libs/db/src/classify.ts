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
