import { authGuards } from '@community/observability';

export { registerAuth } from '@community/observability';

/**
 * onRequest hook of every /v1/users/:userId/... route: 401 without a valid token, 403
 * (`NS_FORBIDDEN_INBOX`) when the token's subject is another user and has no admin scope.
 */
export const authorizeInbox = authGuards({ prefix: 'NS_', resource: 'notifications', forbiddenCode: 'FORBIDDEN_INBOX' }).ownOrAdmin;
