import { authGuards } from '@community/service';

export { registerAuth } from '@community/service';

/**
 * onRequest hook of /v1/users/:userId/push-subscriptions, as notification-service guards its inbox:
 * 401 without a valid token, 403 (`PS_FORBIDDEN_USER`) when the user token's subject is another user;
 * an operator's admin token (audience push-service) reaches every user's.
 */
export const authorizeSubscriptions = authGuards({ prefix: 'PS_', resource: 'push subscriptions' }).ownOrAdmin;
