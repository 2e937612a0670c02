// The declarative shape of a configuration spec and the TypeScript type inferred from it.
// A spec is data so a service's whole configuration surface can be read (and documented) in one place.

interface VarCommon {
  /** The environment variable, e.g. `AMQP_URL`. It is also the key in the loaded config. */
  readonly name: string;
  /** Never echoed back in error messages or by `redactConfig`. */
  readonly secret?: boolean;
  /** When true and unset (and no default), the value is `undefined` instead of an error. */
  readonly optional?: boolean;
  /**
   * Refuse the default when NODE_ENV=production: a dev default that silently reaches production
   * (a well-known JWT secret) is worse than a failed start.
   */
  readonly refuseDefaultInProduction?: boolean;
  readonly description?: string;
}

export interface UrlVar extends VarCommon {
  readonly kind: 'url';
  readonly default?: string;
  /** Allowed `URL.protocol` values, with the colon: `['amqp:', 'amqps:']`. */
  readonly protocols?: readonly string[];
  /** A comma-separated list of such URLs (the nodes of a cluster), at least one. */
  readonly list?: boolean;
  /** When NODE_ENV=production the URL must carry a password (`scheme://user:password@host`). */
  readonly passwordInProduction?: boolean;
}

export interface StringVar extends VarCommon {
  readonly kind: 'string';
  readonly default?: string;
  readonly minLength?: number;
  /** A structured value checked at load (the value stays the string): `admin-keys` is ADMIN_KEYS' JSON (keys.ts). */
  readonly format?: 'admin-keys';
}

export interface IntVar extends VarCommon {
  /** `duration-ms` also accepts a unit suffix (`500ms`, `10s`, `5m`, `1h`) and yields milliseconds. */
  readonly kind: 'int' | 'duration-ms';
  readonly default?: number;
  readonly min?: number;
  readonly max?: number;
}

export interface EnumVar extends VarCommon {
  readonly kind: 'enum';
  readonly values: readonly string[];
  readonly default?: string;
}

export interface BoolVar extends VarCommon {
  readonly kind: 'bool';
  readonly default?: boolean;
}

export interface IntListVar extends VarCommon {
  /** Comma-separated integers, e.g. retry tiers `1000,4000,16000`; min/max apply to each item. */
  readonly kind: 'int-list';
  readonly default?: readonly number[];
  readonly min?: number;
  readonly max?: number;
}

export type VarSpec = UrlVar | StringVar | IntVar | EnumVar | BoolVar | IntListVar;
export type ConfigSpec = readonly VarSpec[];
export type VarKind = VarSpec['kind'];

type ValueOf<V> = V extends { kind: 'enum'; values: readonly (infer E)[] }
  ? E
  : V extends { kind: 'int' | 'duration-ms' }
    ? number
    : V extends { kind: 'bool' }
      ? boolean
      : V extends { kind: 'int-list' }
        ? number[]
        : string;

type Present<V> = V extends { optional: true } ? ValueOf<V> | undefined : ValueOf<V>;

/** The loaded configuration: one readonly key per env var name, typed by its kind. */
export type ConfigOf<S extends ConfigSpec> = {
  readonly [V in S[number] as V['name']]: Present<V>;
};
