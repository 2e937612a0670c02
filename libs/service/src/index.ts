// The service kit: what every app is built from (docs/SERVICE-TEMPLATE.md). The HTTP server with
// its ops routes and error handler, the coded error catalogue, readiness, bearer-token auth and its
// guards, keyset cursors, and the process lifecycle (runService, serviceMain). Logs, metrics and
// traces are @community/observability's.
export { answers, brokerDetails, databaseAnswers, readinessState } from './readiness';
export type { ReadinessChecks, ReadinessProbe, ReadinessState } from './readiness';
export { CodedHttpError, defineErrors, DEPENDENCY_UNAVAILABLE, networkUnavailable } from './http-errors';
export type { DependencyErrorClassifier, ErrorHandlerOptions } from './http-errors';
export { buildServer, listen } from './server';
export { ErrorBody, errorResponses, OPENAPI_PATH, OpenObject, openapiPath, textResponse } from './openapi';
export type { DocumentedBody } from './openapi';
export type { ServerOptions } from './server';
export { keysetCodec } from './keyset-cursor';
export type { KeysetCodec } from './keyset-cursor';
export { runService } from './run-service';
export type { RunningService, RunServiceOptions } from './run-service';
export {
  ADMIN_TOKEN_ISSUER,
  adminTokenSigner,
  authGuards,
  authSettingsFrom,
  SECURITY,
  SECURITY_SCHEMES,
  securityOf,
  generateOperatorKey,
  registerAuth,
  serviceTokenSigner,
  tokenAuthenticator,
  TokenRefused,
  userTokenSigner,
} from './auth';
export type {
  AdminTokenSignerOptions,
  AuthConfig,
  AuthGuardOptions,
  AuthSettings,
  Principal,
  SecurityRequirement,
  ServiceTokenOptions,
  ServiceTokenSignerOptions,
  TokenAuthenticator,
  UserTokenSignerOptions,
} from './auth';
export { serviceMain } from './service-main';
export type { ServiceMainOptions } from './service-main';
export { serviceMessaging } from './messaging';
export type { ServiceMessagingConfig, ServiceMessagingOptions } from './messaging';
export { READ_STATE_MAX_KEYS, ReadStateClient } from './read-state-client';
export type { ReadStateClientOptions } from './read-state-client';
