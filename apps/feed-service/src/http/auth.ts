import { authGuards } from '@community/service';

export { registerAuth } from '@community/service';

/**
 * onRequest hook of /v1/users/:userId/feed: 401 without a valid token, 403 (`FS_FORBIDDEN_USER`)
 * when the token's subject is another user and has no admin scope.
 */
export const authorizeFeed = authGuards({ prefix: 'FS_', resource: 'feed' }).ownOrAdmin;
