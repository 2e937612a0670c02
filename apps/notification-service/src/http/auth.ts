import type { FastifyRequest } from 'fastify';
import { createDecoder } from 'fast-jwt';
import { ed25519Key } from '@community/config';
import { authGuards, type Principal, type SecurityRequirement } from '@community/service';
import { ERRORS } from './errors';

export { registerAuth } from '@community/service';

/** The scope of email-service's service tokens: read preferences, turn email channels off. */
export const OPT_OUT_SCOPE = 'preferences:opt-out';

/** The scope of the senders' read-state checks (POST /v1/internal/read-state). */
export const READ_STATE_SCOPE = 'notifications:read-state';

/** The services that may ask read state: each verified with its own public key. */
export const READ_STATE_ISSUERS = ['email-service', 'push-service'] as const;

/** What the read-state route accepts, for /openapi.json: a service token with READ_STATE_SCOPE. */
export const READ_STATE_SECURITY: SecurityRequirement[] = [{ serviceToken: [READ_STATE_SCOPE] }];

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
  /**
   * onRequest hook of POST /v1/internal/read-state: service tokens only, of email-service or
   * push-service (each verified with its own public key), holding READ_STATE_SCOPE. 401 for a bad
   * token of any kind (another issuer's key, expired, …); 403 `NS_SERVICE_FORBIDDEN` without the
   * scope; 403 `NS_SERVICE_TOKEN_REQUIRED` for a valid user or admin token.
   */
  authorizeReadState(request: FastifyRequest): Promise<void>;
}

/** The public keys of the services that call notification-service. */
export interface ServiceVerifyKeys {
  /** EMAIL_SERVICE_VERIFY_KEY: opt-out and read-state tokens. */
  emailService: string;
  /** PUSH_SERVICE_VERIFY_KEY: read-state tokens. */
  pushService: string;
}

const decodePayload = createDecoder();

/** The `iss` a token claims, unverified: it only picks the key its signature is then checked with. */
function claimedIssuer(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  if (typeof auth !== 'string' || !auth.startsWith('Bearer ')) return undefined;
  try {
    const iss = (decodePayload(auth.slice(7)) as { iss?: unknown }).iss;
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The guards. Service tokens are verified with the public key of the one service they claim to be
 * from (`authGuards` pins one issuer per key): email-service's for the preference routes,
 * email-service's or push-service's for the read-state route.
 */
export function inboxGuards(keys: ServiceVerifyKeys): InboxGuards {
  const guardsFor = (issuer: (typeof READ_STATE_ISSUERS)[number], key: string) =>
    authGuards({
      prefix: 'NS_',
      resource: 'notifications',
      forbiddenCode: 'FORBIDDEN_INBOX',
      serviceTokens: { verifyKey: ed25519Key('public', key), issuer, audience: 'notification-service' },
    });
  const email = guardsFor('email-service', keys.emailService);
  const push = guardsFor('push-service', keys.pushService);
  const readStateOf = {
    'email-service': email.ownOrAdminOrService(READ_STATE_SCOPE, ['POST']),
    'push-service': push.ownOrAdminOrService(READ_STATE_SCOPE, ['POST']),
  };

  async function authorizeReadState(request: FastifyRequest): Promise<void> {
    // A token claiming push-service is checked with push-service's key; any other with email-service's
    // (whose verifier refuses another issuer with a 401, like any token it cannot verify).
    const guard = readStateOf[claimedIssuer(request) === 'push-service' ? 'push-service' : 'email-service'];
    try {
      await guard(request);
    } catch (err) {
      // A valid user token reaches the inbox check (403 NS_FORBIDDEN_INBOX: this route has no user
      // in its path); a bad one is the 401 it always is. Either way a service token was needed.
      if (request.principal && !request.principal.service) throw serviceTokenRequired(request.principal);
      throw err;
    }
    // Only an admin token gets through ownOrAdmin here: refused as well.
    const principal = request.principal;
    if (principal && !principal.service) throw serviceTokenRequired(principal);
  }

  return {
    authorizeInbox: email.ownOrAdmin,
    authorizePreferences: email.ownOrAdminOrService(OPT_OUT_SCOPE, ['GET', 'PUT']),
    serviceForbidden: email.serviceForbidden,
    authorizeReadState,
  };
}

function serviceTokenRequired(principal: Principal): Error {
  return ERRORS.SERVICE_TOKEN_REQUIRED(
    principal.admin ? `operator '${principal.userId}'` : `user '${principal.userId}'`,
    READ_STATE_ISSUERS.join(' or '),
    READ_STATE_SCOPE,
  );
}
