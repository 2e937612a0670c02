/**
 * demo-community-api's public entry: what code outside the app (the in-process tracing test) builds
 * it from. Everything else under src/ is internal and may change shape without notice.
 */
export { loadDemoConfig } from './config';
export { createDemoService } from './service';
export type { DemoService } from './service';
// The error catalogue, for the spec that ties every code to docs/ERRORS.md (scripts/dev/error-catalogue.spec.ts).
export { ERRORS } from './http/errors';
