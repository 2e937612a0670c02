import type { FastifyRequest } from 'fastify';
import { ed25519Key } from '@community/config';
import { authGuards, type Principal } from '@community/service';

export { registerAuth } from '@community/service';

/** The scope of email-service's service tokens: read preferences, turn email channels off. */
export const OPT_OUT_SCOPE = 'preferences:opt-out';

export interface InboxGuards {
  /**
   * onRequest hook of every /v1/users/:userId/... route: 401 without a valid token, 403
   * (`NS_FORBIDDEN_INBOX`) when the token's subject is another user and has no admin scope, 403
   * (`NS_SERVICE_FORBIDDEN`) for a service token.
   */
  authorizeInbox(request: FastifyRequest): Promise<void>;
  /** The same, and email-service's service tokens with OPT_OUT_SCOPE, on GET and PUT. */
  authorizePreferences(request: FastifyRequest): Promise<void>;
  /** 403 for a service token that asks for more than turning email off. */
  serviceForbidden(principal: Principal, what: string): Error;
}

/** The guards, with email-service's public key (EMAIL_SERVICE_VERIFY_KEY) for its service tokens. */
export function inboxGuards(emailServiceVerifyKey: string): InboxGuards {
  const guards = authGuards({
    prefix: 'NS_',
    resource: 'notifications',
    forbiddenCode: 'FORBIDDEN_INBOX',
    serviceTokens: {
      verifyKey: ed25519Key('public', emailServiceVerifyKey),
      issuer: 'email-service',
      audience: 'notification-service',
    },
  });
  return {
    authorizeInbox: guards.ownOrAdmin,
    authorizePreferences: guards.ownOrAdminOrService(OPT_OUT_SCOPE, ['GET', 'PUT']),
    serviceForbidden: guards.serviceForbidden,
  };
}
