export { ConfigError, loadConfig, redactConfig } from './load-config';
export type { ConfigIssue } from './load-config';
export {
  AUTH_VARIABLES,
  commonConfig,
  DEFAULT_PORTS,
  DEFAULT_USER_TOKEN_AUDIENCE,
  DEFAULT_USER_TOKEN_ISSUER,
  DEV_ADMIN_KEY_ID,
  DEV_ADMIN_KEYS,
  DEV_ADMIN_OPERATOR,
  DEV_JWT_SECRET,
  DEV_UNSUBSCRIBE_TOKEN_SECRET,
  LOCAL_DEFAULTS,
} from './common';
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
export {
  DEV_ADMIN_SIGNING_KEY,
  DEV_EMAIL_SERVICE_SIGNING_KEY,
  DEV_EMAIL_SERVICE_VERIFY_KEY,
  DEV_PUSH_SERVICE_SIGNING_KEY,
  DEV_PUSH_SERVICE_VERIFY_KEY,
  ed25519Key,
  ed25519KeyIssue,
  parseAdminKeys,
} from './keys';
export type { AdminKey } from './keys';
