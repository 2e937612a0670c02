-- The W3C trace context of the span that wrote each outbox row (docs/TRACING.md). Nullable with no
-- default: a catalogue-only change in PostgreSQL (no table rewrite, a brief ACCESS EXCLUSIVE lock),
-- and rows written with tracing off keep NULL.
-- AlterTable
ALTER TABLE "outbox_messages" ADD COLUMN     "trace_context" JSONB;
