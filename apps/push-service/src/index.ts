/**
 * push-service's public entry: what code outside the app (end-to-end tests, benchmarks) builds it
 * from. Everything else under src/ is internal and may change shape without notice.
 */
export { createPushService, type PushService, type PushServiceDeps } from './service';
export { loadPushConfig, PUSH_CONFIG_SPEC, SERVICE_NAME, type PushConfig } from './config';
// The error catalogue, for the spec that ties every code to docs/ERRORS.md (scripts/dev/error-catalogue.spec.ts).
export { ERRORS } from './http/errors';
