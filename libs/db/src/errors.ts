/**
 * PostgreSQL errors are told apart by SQLSTATE (`err.code`, five characters), never by message text:
 * messages are localised and change between versions. Classes that matter here: 08 connection,
 * 22 data exception, 23 integrity violation, 40 serialization failure / deadlock, 53 insufficient
 * resources, 57 operator intervention (57P01: the backend was terminated).
 */

/** The SQLSTATE of a PostgreSQL error, or undefined for anything else (a socket error has `code` ECONNRESET). */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** A unique-constraint violation (SQLSTATE 23505), optionally on a named constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  return (
    sqlState(err) === '23505' &&
    (constraint === undefined || (err as { constraint?: unknown }).constraint === constraint)
  );
}
