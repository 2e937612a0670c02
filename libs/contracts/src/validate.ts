import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import type { TSchema } from '@sinclair/typebox';
import { ContractError, type ContractErrorDetails } from './errors';
import { EVENT_TYPES, eventSchemaOf, type AnyEvent, type EventType } from './events';

export type ValidationResult = { ok: true; event: AnyEvent } | { ok: false; error: ContractError };

interface CompiledType {
  version: number;
  check: TypeCheck<TSchema>;
}

// Compiled once at module load: validation runs on every consumed message (>10k/s), and a
// compiled TypeBox check is a straight-line function, an order of magnitude faster than Value.Check.
const compiled = new Map<string, CompiledType>(
  (Object.keys(EVENT_TYPES) as EventType[]).map((type) => [
    type,
    { version: EVENT_TYPES[type].version, check: TypeCompiler.Compile(eventSchemaOf(type)) },
  ]),
);

// fatal: bytes that are not UTF-8 are malformed, not silently replaced by U+FFFD.
const utf8 = new TextDecoder('utf-8', { fatal: true });

const MAX_ECHO = 100;
function echo(value: string): string {
  return value.length > MAX_ECHO ? `${value.slice(0, MAX_ECHO)}…` : value;
}

function fail(...args: ConstructorParameters<typeof ContractError>): { ok: false; error: ContractError } {
  return { ok: false, error: new ContractError(...args) };
}

type Parsed = { ok: true; value: unknown; text?: string } | { ok: false; error: ContractError };

function parse(raw: unknown): Parsed {
  let text: string;
  if (typeof raw === 'string') {
    text = raw;
  } else if (raw instanceof Uint8Array) {
    // Buffer is a Uint8Array: this covers amqplib's `msg.content`.
    try {
      text = utf8.decode(raw);
    } catch (cause) {
      return fail('MALFORMED_JSON', '', 'Body is not valid UTF-8', { cause });
    }
  } else {
    return { ok: true, value: raw };
  }
  try {
    return { ok: true, value: JSON.parse(text), text };
  } catch (cause) {
    return fail('MALFORMED_JSON', '', `Body is not valid JSON (${(cause as Error).message})`, { cause });
  }
}

// NUL and unpaired surrogates are valid JSON escapes (\u0000, \ud800) but no text a consumer can
// keep: PostgreSQL refuses NUL, and an unpaired surrogate turns into U+FFFD on its way to UTF-8, so
// the event would be stored altered. In JSON text both can only arrive as such escapes, so the walk
// below runs only for a body that has one (or for an already parsed object).
const SUSPECT_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const unstorable = (s: string): boolean => s.includes('\u0000') || LONE_SURROGATE.test(s);

/** Longest pointer reported; deeper ones are cut (a body may nest a million levels). */
const MAX_POINTER = 200;

/**
 * JSON pointer of a string (key or value) holding NUL or an unpaired surrogate, or undefined.
 * Iterative: JSON.parse accepts any depth, so a recursive walk could be made to overflow the stack.
 */
export function findUnstorableText(root: unknown): string | undefined {
  const stack: Array<{ value: unknown; path: string }> = [{ value: root, path: '' }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { value, path } = top;
    if (typeof value === 'string') {
      if (unstorable(value)) return path;
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, child] of Object.entries(value)) {
      const at = path.length > MAX_POINTER ? path : `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (unstorable(key)) return at;
      stack.push({ value: child, path: at });
    }
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function reasonOf(error: ValueError): string {
  // TypeBox says "Expected union value" for enums; naming the allowed values is more useful.
  if (error.type === ValueErrorType.Union && Array.isArray(error.schema.anyOf)) {
    const consts = (error.schema.anyOf as TSchema[]).map((s) => s.const);
    if (consts.every((c) => typeof c === 'string')) return `Expected one of ${consts.map((c) => `'${c}'`).join(', ')}`;
  }
  return error.message;
}

/** Checks that `raw` (a Buffer, a JSON string or an already parsed object) is a valid event. */
export function validate(raw: unknown): ValidationResult {
  const parsed = parse(raw);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  if (!isObject(value)) return fail('SCHEMA_VIOLATION', '', 'Expected object');

  const details: ContractErrorDetails = {};
  if (typeof value.id === 'string') details.eventId = echo(value.id);

  const type = value.type;
  if (type === undefined) return fail('SCHEMA_VIOLATION', '/type', 'Expected required property', details);
  if (typeof type !== 'string') return fail('SCHEMA_VIOLATION', '/type', 'Expected string', details);
  details.eventType = echo(type);
  const entry = compiled.get(type);
  if (entry === undefined) return fail('UNKNOWN_TYPE', '/type', `Unknown event type '${echo(type)}'`, details);

  const version = value.version;
  if (version !== entry.version) {
    if (version === undefined) return fail('SCHEMA_VIOLATION', '/version', 'Expected required property', details);
    if (typeof version !== 'number' || !Number.isInteger(version)) {
      return fail('SCHEMA_VIOLATION', '/version', 'Expected integer', details);
    }
    return fail(
      'UNSUPPORTED_VERSION',
      '/version',
      `Unsupported version ${version} of '${type}' (supported: ${entry.version})`,
      details,
    );
  }

  if (entry.check.Check(value)) {
    const at = parsed.text === undefined || SUSPECT_ESCAPE.test(parsed.text) ? findUnstorableText(value) : undefined;
    if (at !== undefined)
      return fail('SCHEMA_VIOLATION', at, 'Expected text without NUL characters or unpaired surrogates', details);
    return { ok: true, event: value as unknown as AnyEvent };
  }
  // Slow path only for invalid messages: report the first violation, which for a missing field is
  // "Expected required property" at its exact pointer.
  const first = entry.check.Errors(value).First();
  if (first === undefined) return fail('SCHEMA_VIOLATION', '', 'Invalid event', details);
  return fail('SCHEMA_VIOLATION', first.path, reasonOf(first), details);
}

/** Like `validate`, but returns the event or throws the `ContractError`. */
export function validateOrThrow(raw: unknown): AnyEvent {
  const result = validate(raw);
  if (!result.ok) throw result.error;
  return result.event;
}
