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
    catalogue[key] = (...args: never[]) =>
      new CodedHttpError(spec.statusCode, `${prefix}${key}`, typeof message === 'string' ? message : message(...args));
  }
  return catalogue as ErrorCatalogue<C>;
}

/** The contract's error body (docs/CONTRACT.md, "HTTP contract"), in fastify's key order. */
function errorBody(err: CodedHttpError): { statusCode: number; code: string; error: string; message: string } {
  return {
    statusCode: err.statusCode,
    code: err.code,
    error: STATUS_CODES[err.statusCode] ?? 'Error',
    message: err.message,
  };
}

/**
 * Tells whether an error means a dependency is unavailable for the moment (not the request's fault,
 * not a bug): returns the dependency's name (e.g. 'database'), or undefined when it does not know the
 * error. Each service passes the ones for the clients it uses (`pgUnavailable` from @community/db);
 * this lib stays free of those clients.
 */
export type DependencyErrorClassifier = (err: unknown) => string | undefined;

/** The wire code of a 503 for an unavailable dependency: one code in every service, clients retry on it. */
export const DEPENDENCY_UNAVAILABLE = 'DEPENDENCY_UNAVAILABLE';

/** The code of a crash: a 5xx nobody coded (a bug, a constraint, a privilege refused). */
export const INTERNAL_ERROR = 'INTERNAL_ERROR';
const INTERNAL_ERROR_MESSAGE =
  'Something went wrong on our side; the error is logged under this request id (x-request-id)';

/**
 * Node's socket errors: the peer refused, reset or never answered. Whatever the client library,
 * one of these means the dependency behind the socket is down or unreachable right now.
 */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

/** Recognises node's network errors (on the error or its `cause`, as wrappers keep it). */
export const networkUnavailable: DependencyErrorClassifier = (err) => {
  for (
    let e: unknown = err, depth = 0;
    e !== null && typeof e === 'object' && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return 'dependency';
  }
  return undefined;
};

export interface ErrorHandlerOptions {
  /**
   * Classifiers tried in order on every error that is not a catalogue error; the first name returned
   * makes the reply `503 DEPENDENCY_UNAVAILABLE` with `Retry-After`. `networkUnavailable` always
   * runs after them.
   */
  dependencyErrors?: readonly DependencyErrorClassifier[];
  /** Seconds in the `Retry-After` of a 503 for an unavailable dependency (default 5). */
  retryAfterSeconds?: number;
}

/**
 * Answers catalogue errors and unavailable dependencies; fastify's own client errors (schema
 * validation, a body too large) are rethrown to its default handler: same bodies as before. A crash
 * (any other error) is answered `500 INTERNAL_ERROR` with a generic message: a driver's or a
 * query's text ("permission denied for table …", a constraint name) tells a client about our
 * database, and the caller can do nothing with it; the error itself is logged under the request id,
 * which the response carries. A client error is logged at info (it is the caller's mistake, not
 * ours), a server one at error, an unavailable dependency at warn (an outage, already in /readyz).
 */
function errorHandler(options: ErrorHandlerOptions) {
  const classifiers = [...(options.dependencyErrors ?? []), networkUnavailable];
  const retryAfter = String(options.retryAfterSeconds ?? 5);
  return function codedErrorHandler(
    error: FastifyError | Error,
    request: FastifyRequest,
    reply: FastifyReply,
  ): FastifyReply {
    if (!(error instanceof CodedHttpError)) {
      const dependency = classify(classifiers, error);
      if (dependency === undefined) {
        const status = (error as { statusCode?: unknown }).statusCode;
        if (typeof status === 'number' && status < 500) throw error;
        request.log.error({ err: error, code: INTERNAL_ERROR }, 'request failed');
        return reply
          .code(500)
          .header('x-request-id', request.id)
          .send(errorBody(new CodedHttpError(500, INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE)));
      }
      const unavailable = new CodedHttpError(
        503,
        DEPENDENCY_UNAVAILABLE,
        `${dependency} is unavailable for the moment; retry after ${retryAfter} s`,
      );
      request.log.warn({ err: error, code: DEPENDENCY_UNAVAILABLE, dependency }, unavailable.message);
      return reply.code(503).header('retry-after', retryAfter).send(errorBody(unavailable));
    }
    if (error.statusCode >= 500) request.log.error({ err: error, code: error.code }, error.message);
    else request.log.info({ code: error.code, statusCode: error.statusCode }, error.message);
    return reply.code(error.statusCode).send(errorBody(error));
  };
}

function classify(classifiers: readonly DependencyErrorClassifier[], error: unknown): string | undefined {
  // A fastify error with a 4xx status (a bad body, a too-large payload) is the client's: never a 503.
  const status = (error as { statusCode?: unknown }).statusCode;
  if (typeof status === 'number' && status < 500) return undefined;
  for (const classifier of classifiers) {
    const name = classifier(error);
    if (name !== undefined) return name;
  }
  return undefined;
}

export function registerErrorHandler(app: FastifyInstance, options: ErrorHandlerOptions = {}): void {
  const retryAfter = options.retryAfterSeconds ?? 5;
  if (!Number.isInteger(retryAfter) || retryAfter < 0)
    throw new RangeError(`retryAfterSeconds must be a whole number of seconds >= 0, got ${String(retryAfter)}`);
  app.setErrorHandler(errorHandler(options));
}
