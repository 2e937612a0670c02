/**
 * The DLQ console's tables (dlq_messages, dlq_groups, dlq_operations, dlq_operation_items), in three
 * vocabularies: the dead letters (dead-letters.ts), the operator's actions on a selection of them
 * (operations.ts), and a replay's run (replays.ts). Free functions that take the pool or a
 * transaction's client.
 */
export * from './dead-letters';
export * from './operations';
export * from './replays';
export { DEFAULT_RESTORE_WINDOW_MS, type MessageRow } from './rows';
