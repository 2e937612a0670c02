// Masks personal data and credentials that end up inside free text: log messages, error messages,
// excerpts, URLs. Keyed secrets (`password`, `authorization`, `email` fields) are removed by pino's
// `redact` paths instead (see logger.ts); this catches what no key name can predict.
//
// None of the patterns can match `"` or `\`, and the replacements contain neither, so applying
// them to an already-serialized JSON log line keeps it valid JSON.

/** Paths pino removes outright. `*` is one level deep, so common nestings are listed explicitly. */
export const REDACT_PATHS: readonly string[] = [
  'password',
  '*.password',
  'token',
  '*.token',
  'accessToken',
  '*.accessToken',
  'refreshToken',
  '*.refreshToken',
  'secret',
  '*.secret',
  'jwt',
  '*.jwt',
  'apiKey',
  '*.apiKey',
  'smtpPassword',
  '*.smtpPassword',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'email',
  '*.email',
  'data.email',
  'payload.data.email',
];

// `Bearer <token>`: the token alphabet of RFC 6750 (b64token).
const BEARER = /\b(bearer\s+)[A-Za-z0-9\-._~+/]+=*/gi;
// A JWT outside a Bearer header: three base64url parts, the header always starts `eyJ` ('{"').
// The lookbehind (not \b, which '-' satisfies) keeps a run like `eyJ-eyJ-…` from being rescanned.
const JWT = /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;
// `scheme://user:password@host`: keep the user (useful when debugging), drop the password.
const URL_PASSWORD = /(\/\/[^/:@\s"\\]*:)[^/@\s"\\]+@/g;
// Pragmatic, not RFC 5322: what appears in real logs. The domain is kept for provider debugging.
// The lookbehind lets a match start only where a run of local-part characters starts, and the
// local part is capped at 64 (RFC 5321): without both, a long run with an '@' somewhere later in
// the line is rescanned from every position (quadratic; seconds on a 100 kB line).
// The '@' may be percent-encoded (`%40`): an address in a URL path or query, as request logs print it.
// A match may also start right after a percent-encoded separator (`mention%3Ac1%3Aalice%40x.org`:
// an address inside a query value); each such start scans at most 64 characters, so still linear.
const EMAIL =
  /(?:(?<![A-Za-z0-9._%+-])|(?<=%[0-9A-Fa-f]{2}))([A-Za-z0-9])[A-Za-z0-9._%+-]{0,63}(?:@|%40)([A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,})/g;
// A credential in a query string (`/v1/unsubscribe?token=…`, `?api_key=…`): request logs print
// the URL, and such a token is not a JWT the pattern above would catch.
const QUERY_SECRET =
  /([?&](?:token|access_token|refresh_token|id_token|api_key|apikey|secret|password|signature|sig)=)[^&\s"\\#]+/gi;

export const REDACTED = '[REDACTED]';

/**
 * `alice@example.com` → `a***@example.com`; `Bearer eyJ…` → `Bearer [REDACTED]`; a bare JWT →
 * `[REDACTED]`; `amqp://user:pw@host` → `amqp://user:***@host`; `/u/alice%40example.com` →
 * `/u/a***@example.com`; `?token=abc` → `?token=[REDACTED]`.
 * Cheap on the common path: each regex runs only when its marker character is present.
 */
export function redactString(s: string): string {
  let out = s;
  if (out.includes('eyJ') || /bearer/i.test(out)) {
    out = out.replace(BEARER, `$1${REDACTED}`).replace(JWT, REDACTED);
  }
  if (out.includes('@')) out = out.replace(URL_PASSWORD, '$1***@');
  if (out.includes('@') || out.includes('%40')) out = out.replace(EMAIL, '$1***@$2');
  if (out.includes('=')) out = out.replace(QUERY_SECRET, `$1${REDACTED}`);
  return out;
}
