export { ConfigError, loadConfig, redactConfig } from './load-config';
export type { ConfigIssue } from './load-config';
export { commonConfig, DEFAULT_PORTS, DEV_JWT_SECRET, LOCAL_DEFAULTS } from './common';
export type { CommonConfigSpec, LogLevel, ServiceName } from './common';
export type {
  BoolVar,
  ConfigOf,
  ConfigSpec,
  EnumVar,
  IntListVar,
  IntVar,
  StringVar,
  UrlVar,
  VarKind,
  VarSpec,
} from './spec';
