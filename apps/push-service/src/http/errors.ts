import { defineErrors } from '@community/service';

/**
 * Every error the push API answers with besides the token errors (PS_INVALID_TOKEN,
 * PS_TOKEN_WITHOUT_SUBJECT, PS_FORBIDDEN_USER: `authGuards` in libs/service), by code (`PS_` + key
 * on the wire). Bodies keep fastify's shape `{ statusCode, code, error, message }`.
 */
export const ERRORS = defineErrors('PS_', {
  INVALID_SUBSCRIPTION: {
    statusCode: 400,
    message: (reason: string) => `the push subscription is not valid: ${reason}`,
  },
  TOO_MANY_SUBSCRIPTIONS: {
    statusCode: 409,
    message: (count: number, max: number) =>
      `the user has ${count} push subscriptions, the most allowed (PUSH_MAX_SUBSCRIPTIONS_PER_USER = ${max}): remove one (DELETE with its endpoint) before adding another`,
  },
});
