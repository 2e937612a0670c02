import { authGuards } from '@community/service';

export { registerAuth } from '@community/service';

/** onRequest hook of every /v1/admin/... route: 401 without a valid token, 403 RC_ADMIN_REQUIRED without the admin scope. */
export const adminOnly = authGuards({ prefix: 'RC_', resource: 'data' }).adminOnly;
