import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * The coded error catalogue every service's HTTP surface uses. A service declares its errors once,
 * as data (`defineErrors`); a route throws one (`throw ERRORS.NOT_FOUND(id)`); the error handler
 * that `buildServer` installs answers it with the contract's error body, fastify's own shape plus
 * the code:
 *
 *   { "statusCode": 404, "code": "NS_NOTIFICATION_NOT_FOUND", "error": "Not Found", "message": "…" }
 *
 * Clients branch on `code` (stable, unique per service), people read `message` (says what is wrong
 * and what is expected). Keys are written in the order fastify's default error serializer writes
 * them, so a coded reply is byte for byte what fastify itself would have sent for the same error.
 */
export class CodedHttpError extends Error {
  override name = 'CodedHttpError';
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  /** The same reply under another code: e.g. a token verifier's own code, more precise than ours. */
  withCode(code: string): CodedHttpError {
    return new CodedHttpError(this.statusCode, code, this.message);
  }
}

/** One catalogue entry: its HTTP status and how its message is worded from the arguments. */
export interface ErrorSpec {
  statusCode: number;
  // `never[]` accepts a message function of any parameter list; the factory keeps the precise one.
  message: string | ((...args: never[]) => string);
}

type Args<S extends ErrorSpec> = S['message'] extends (...args: infer A) => string ? A : [];

/** A catalogue: one factory per entry, taking the entry's message arguments. */
export type ErrorCatalogue<C extends Record<string, ErrorSpec>> = {
  readonly [K in keyof C]: (...args: Args<C[K]>) => CodedHttpError;
};

/**
 * Builds a service's catalogue. The wire code is `prefix + key` (e.g. `NS_` + `INVALID_CURSOR`), so
 * codes of different services never collide in a client that talks to several. Statuses must be
 * 4xx or 5xx: anything else is a programming mistake, refused at startup rather than on a request.
 */
export function defineErrors<const C extends Record<string, ErrorSpec>>(prefix: string, specs: C): ErrorCatalogue<C> {
  const catalogue: Record<string, (...args: never[]) => CodedHttpError> = {};
  for (const [key, spec] of Object.entries(specs)) {
    if (!Number.isInteger(spec.statusCode) || spec.statusCode < 400 || spec.statusCode > 599) {
      throw new Error(`error '${prefix}${key}': statusCode ${spec.statusCode} is not an HTTP error status (400-599)`);
    }
    const { message } = spec;
    catalogue[key] = (...args: never[]) => new CodedHttpError(spec.statusCode, `${prefix}${key}`, typeof message === 'string' ? message : message(...args));
  }
  return catalogue as ErrorCatalogue<C>;
}

/** The contract's error body (docs/CONTRACT.md, "HTTP contract"), in fastify's key order. */
function errorBody(err: CodedHttpError): { statusCode: number; code: string; error: string; message: string } {
  return { statusCode: err.statusCode, code: err.code, error: STATUS_CODES[err.statusCode] ?? 'Error', message: err.message };
}

/**
 * Answers catalogue errors; anything else (schema validation, an unknown route, a crash) is
 * rethrown, which hands it to fastify's default handler: same bodies, same logging as before.
 * A client error is logged at info (it is the caller's mistake, not ours), a server one at error.
 */
function codedErrorHandler(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (!(error instanceof CodedHttpError)) throw error;
  if (error.statusCode >= 500) request.log.error({ err: error, code: error.code }, error.message);
  else request.log.info({ code: error.code, statusCode: error.statusCode }, error.message);
  return reply.code(error.statusCode).send(errorBody(error));
}

export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler(codedErrorHandler);
}
