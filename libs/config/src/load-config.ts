import { maskUrlCredentials, parseValue } from './parsers';
import type { ConfigOf, ConfigSpec, VarSpec } from './spec';

export interface ConfigIssue {
  /** The environment variable at fault. */
  readonly name: string;
  /** `NAME: what is wrong (expected what)`. */
  readonly message: string;
}

/** Thrown once with every problem, so an operator fixes the whole environment in one go. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly issues: readonly ConfigIssue[]) {
    super(
      `Invalid configuration (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n` +
        issues.map((i) => `  - ${i.message}`).join('\n'),
    );
  }
}

type Env = Record<string, string | undefined>;

function defaultAsText(spec: VarSpec): string | undefined {
  if (spec.default === undefined) return undefined;
  return Array.isArray(spec.default) ? spec.default.join(',') : String(spec.default);
}

/**
 * Reads `env` against `spec` and returns a typed object keyed by variable name.
 * Throws `ConfigError` listing every missing or malformed variable.
 *
 * An empty value counts as unset: compose files commonly pass `FOO=${FOO}`, which yields ''
 * when the host has no FOO, and that should mean "use the default", not "invalid".
 * Defaults go through the same parser, so a bad default in a spec fails loudly too.
 */
export function loadConfig<const S extends ConfigSpec>(spec: S, env: Env = process.env): ConfigOf<S> {
  const issues: ConfigIssue[] = [];
  const out: Record<string, unknown> = {};
  const seen = new Set<string>();
  const production = env['NODE_ENV'] === 'production';

  for (const v of spec) {
    if (seen.has(v.name)) throw new Error(`config spec declares ${v.name} twice`);
    seen.add(v.name);

    const fromEnv = env[v.name]?.trim();
    const raw = fromEnv ? fromEnv : defaultAsText(v);
    const usingDefault = !fromEnv;

    if (raw === undefined) {
      if (v.optional) out[v.name] = undefined;
      else issues.push({ name: v.name, message: `${v.name}: is required but not set (expected ${expectation(v)})` });
      continue;
    }
    if (usingDefault && production && v.refuseDefaultInProduction) {
      issues.push({
        name: v.name,
        message: `${v.name}: the development default is refused when NODE_ENV=production (expected ${v.name} to be set explicitly)`,
      });
      continue;
    }
    const parsed = parseValue(v, raw);
    if (parsed.ok && production && v.kind === 'url' && v.passwordInProduction && new URL(raw).password === '') {
      issues.push({
        name: v.name,
        message: `${v.name}: a URL without a password is refused when NODE_ENV=production (expected ${v.name} as scheme://user:password@host)`,
      });
      continue;
    }
    if (parsed.ok) out[v.name] = parsed.value;
    else issues.push({ name: v.name, message: `${v.name}: ${parsed.problem}${usingDefault ? ' [spec default]' : ''}` });
  }

  if (issues.length > 0) throw new ConfigError(issues);
  return Object.freeze(out) as ConfigOf<S>;
}

function expectation(v: VarSpec): string {
  switch (v.kind) {
    case 'url':
      return v.protocols?.length ? `a URL: ${v.protocols.map((p) => `${p}//`).join(' or ')}` : 'a URL';
    case 'enum':
      return `one of: ${v.values.join(', ')}`;
    case 'int':
      return 'an integer';
    case 'duration-ms':
      return 'a duration in milliseconds';
    case 'bool':
      return 'true or false';
    case 'int-list':
      return 'comma-separated integers';
    case 'string':
      return v.secret ? 'a secret value' : 'a value';
  }
}

/**
 * A copy of a loaded config that is safe to log at startup: secrets become '[secret]' and URL
 * passwords are masked. Logging the effective config is how an operator spots a wrong default.
 */
export function redactConfig<const S extends ConfigSpec>(spec: S, config: ConfigOf<S>): Record<string, unknown> {
  const values = config as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const v of spec) {
    const value = values[v.name];
    if (v.secret && value !== undefined) out[v.name] = '[secret]';
    // Every string, not only `url` kinds: a variable typed `string` may hold a URL too
    // (RABBITMQ_MANAGEMENT_URL, empty by default), and the log line's own masking misses passwords
    // with a `"` or `\` in them (escaped in the JSON line).
    else if (typeof value === 'string') out[v.name] = maskUrlCredentials(value);
    else out[v.name] = value;
  }
  return out;
}
