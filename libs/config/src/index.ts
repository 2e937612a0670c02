export { ConfigError, loadConfig, redactConfig } from './load-config';
export type { ConfigIssue } from './load-config';
export { commonConfig, DEFAULT_PORTS, DEV_JWT_SECRET, DEV_UNSUBSCRIBE_TOKEN_SECRET, LOCAL_DEFAULTS } from './common';
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
export { DEV_EMAIL_SERVICE_SIGNING_KEY, DEV_EMAIL_SERVICE_VERIFY_KEY, ed25519Key, ed25519KeyIssue } from './keys';
