// One parser per kind. Each turns the raw string into a typed value or a sentence that says what is
// wrong and what was expected; the loader prefixes the variable name and collects every problem.
import { parseAdminKeys } from './keys';
import type { VarSpec } from './spec';

export type Parsed = { ok: true; value: unknown } | { ok: false; problem: string };

const ok = (value: unknown): Parsed => ({ ok: true, value });
const bad = (problem: string): Parsed => ({ ok: false, problem });

/** Hides the password of `scheme://user:password@host` so a config error never prints it. */
export function maskUrlCredentials(value: string): string {
  return value.replace(/(\/\/[^/:@\s]*:)[^/@\s]+@/g, '$1***@');
}

/** How a raw value is quoted in a message: secrets are never echoed, long values are cut. */
export function show(spec: VarSpec, raw: string): string {
  if (spec.secret) return 'the value';
  const masked = maskUrlCredentials(raw);
  return JSON.stringify(masked.length > 80 ? `${masked.slice(0, 77)}...` : masked);
}

function range(min?: number, max?: number): string {
  if (min !== undefined && max !== undefined) return ` between ${min} and ${max}`;
  if (min !== undefined) return ` >= ${min}`;
  if (max !== undefined) return ` <= ${max}`;
  return '';
}

function outOfRange(n: number, min?: number, max?: number): boolean {
  return (min !== undefined && n < min) || (max !== undefined && n > max);
}

function parseInteger(text: string): number | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function parseDurationMs(text: string): number | undefined {
  const m = /^(\d+)\s*(ms|s|m|h)?$/.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]) * DURATION_UNITS[m[2] ?? 'ms'];
  return Number.isSafeInteger(n) ? n : undefined;
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

export function parseValue(spec: VarSpec, raw: string): Parsed {
  const shown = show(spec, raw);
  switch (spec.kind) {
    case 'string':
      if (spec.minLength !== undefined && raw.length < spec.minLength) {
        return bad(`${shown} is too short (expected at least ${spec.minLength} characters)`);
      }
      if (spec.format === 'admin-keys') {
        try {
          parseAdminKeys(raw);
        } catch (err) {
          return bad((err as Error).message);
        }
      }
      return ok(raw);

    case 'url': {
      const expected = spec.protocols?.length
        ? ` (expected ${spec.protocols.map((p) => `${p}//`).join(' or ')})`
        : ' (expected scheme://host...)';
      // A list (`list: true`): every comma-separated part must be such a URL, and there must be one.
      const parts = spec.list
        ? raw
            .split(',')
            .map((p) => p.trim())
            .filter((p) => p.length > 0)
        : [raw];
      if (parts.length === 0) return bad(`${shown} names no URL${expected}`);
      for (const part of parts) {
        const which = parts.length > 1 ? `${show(spec, part)} (in the list)` : shown;
        let url: URL;
        try {
          url = new URL(part);
        } catch {
          return bad(`${which} is not a valid URL${expected}`);
        }
        if (spec.protocols?.length && !spec.protocols.includes(url.protocol)) {
          return bad(`${which} has protocol ${url.protocol}${expected}`);
        }
      }
      return ok(raw);
    }

    case 'int':
    case 'duration-ms': {
      const isDuration = spec.kind === 'duration-ms';
      const n = isDuration ? parseDurationMs(raw) : parseInteger(raw);
      const expected = isDuration
        ? `milliseconds like 10000, or 500ms/10s/5m/1h${range(spec.min, spec.max)}`
        : `an integer${range(spec.min, spec.max)}`;
      if (n === undefined)
        return bad(`${shown} is not ${isDuration ? 'a duration' : 'an integer'} (expected ${expected})`);
      if (outOfRange(n, spec.min, spec.max)) return bad(`${shown} is out of range (expected ${expected})`);
      return ok(n);
    }

    case 'enum':
      if (!spec.values.includes(raw))
        return bad(`${shown} is not allowed (expected one of: ${spec.values.join(', ')})`);
      return ok(raw);

    case 'bool': {
      const v = raw.toLowerCase();
      if (TRUE.has(v)) return ok(true);
      if (FALSE.has(v)) return ok(false);
      return bad(`${shown} is not a boolean (expected true/false, 1/0, yes/no or on/off)`);
    }

    case 'int-list': {
      const expected = `comma-separated integers${range(spec.min, spec.max)}, e.g. 1000,4000,16000`;
      const items = raw.split(',').map((s) => s.trim());
      const values: number[] = [];
      for (const item of items) {
        const n = parseInteger(item);
        if (n === undefined || outOfRange(n, spec.min, spec.max)) {
          return bad(`${shown} has an invalid item ${JSON.stringify(item)} (expected ${expected})`);
        }
        values.push(n);
      }
      return ok(values);
    }
  }
}
