/**
 * email-service's public entry: what code outside the app (the benchmark) builds it from. Everything
 * else under src/ is internal and may change shape without notice.
 */
export { loadEmailConfig } from './config';
export { createComposer } from './delivery/compose';
export { emailMetrics } from './metrics';
export { createEmailService } from './service';
export type { Sender } from './smtp/sender';
export { createSmtpStack } from './smtp/stack';
export { UnsubscribeTokens } from './unsubscribe/token';
export { EMAIL_CONFIG_SPEC } from './config';
export { sendHandlerTimeoutMs } from './retention/policy';
