import { createHash } from 'node:crypto';

/** What every JSON.parse message normalises to. */
export const JSON_SYNTAX_ERROR = '<JSON syntax error>';

/**
 * V8's JSON.parse messages (Node 18 to 24). Each is bounded ({0,n}, no nested repetition): the input
 * is whatever a handler or dependency put in an error message, so a pattern must stay linear.
 */
const JSON_PARSER_MESSAGES: RegExp[] = [
  // Node 20+: the offending token and a snippet of the text around it, "..." where it was cut.
  /Unexpected token '[\s\S]{1,4}?', (?:\.\.\.)?"[\s\S]{0,80}?"(?:\.\.\.)? is not valid JSON/g,
  /"[\s\S]{0,80}?" is not valid JSON/g,
  // Every "… in JSON at position N" / "… after JSON at position N" form, old and new, with the
  // "(line L column C)" newer V8s add; "Unexpected token } in JSON at position 17" is Node 18's.
  /\b(?:Unexpected|Expected|Unterminated|Bad|No number|Exponent part)\b[^\n]{0,80}? (?:in|after) JSON at position \d+(?: \(line \d+ column \d+\))?/g,
  /Unexpected end of JSON input/g,
];

/**
 * A cause, as the console groups dead letters: error class + normalised message + handler +
 * message type (ServicePulse groups by exception type and call site; the handler is our call site).
 *
 * Normalising strips what differs between two occurrences of the same failure, so
 * "user 4f1c… not found" and "user 9a2e… not found" are one group. Order matters: e-mails and
 * uuids before the generic hex/number rules, which would otherwise cut them into pieces.
 */
const RULES: Array<[RegExp, string]> = [
  // JSON.parse's own text says where the bytes broke and quotes them ("Unexpected token } in JSON
  // at position 17", "Unexpected token 'h', "hello" is not valid JSON", "… (line 1 column 5)" on
  // newer V8s): a dozen wordings, each with a position or a snippet of the body. To an operator they
  // are one cause, "the body is not JSON", so the whole parser text becomes one placeholder. First,
  // before the number and quote rules cut it into pieces that differ per message.
  ...JSON_PARSER_MESSAGES.map((re): [RegExp, string] => [re, JSON_SYNTAX_ERROR]),
  [/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g, '<email>'],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>'],
  [/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?/g, '<time>'],
  // Ids of the usual shapes: long hex strings, and words mixing letters and digits (u42, evt_9x).
  [/\b[0-9a-f]{12,}\b/gi, '<id>'],
  [/\b(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]*[A-Za-z_-][A-Za-z0-9_-]*\b/g, '<id>'],
  [/\b\d+(?:\.\d+)?\b/g, '<n>'],
  // Quoted values ("'abc' is not a valid ...") vary per message as well.
  [/'[^']{1,200}'/g, "'<v>'"],
  [/"[^"]{1,200}"/g, '"<v>"'],
];

/**
 * Only the first this many characters of an error message are normalised (and so decide its
 * group). Several rules above are quadratic in the length of a run of matching characters (the
 * e-mail rule retries its local part from every position of a long word, the id rule's lookahead
 * rescans the word): on a whole 16 k-character message they took 0.3 s, on 1 MB minutes, and an
 * error message is whatever a handler or a dependency put in it. On this bound the worst case is
 * about a millisecond. The normalised text is cut at 500 characters anyway, so a cause is told
 * apart by its beginning; two messages that differ only past this bound are one group.
 */
export const FINGERPRINT_INPUT_CHARS = 1024;

export function normaliseErrorMessage(message: string): string {
  let out = message.slice(0, FINGERPRINT_INPUT_CHARS);
  for (const [re, placeholder] of RULES) out = out.replace(re, placeholder);
  return out.replace(/\s+/g, ' ').trim().slice(0, 500);
}

export interface CauseFacts {
  errorClass: string;
  errorMessage: string;
  handler: string | null;
  messageType: string | null;
}

export function fingerprintOf(facts: CauseFacts): { fingerprint: string; normalized: string } {
  const normalized = normaliseErrorMessage(facts.errorMessage);
  const fingerprint = createHash('sha256')
    .update([facts.errorClass, normalized, facts.handler ?? '', facts.messageType ?? ''].join('\u0000'))
    .digest('hex')
    .slice(0, 16);
  return { fingerprint, normalized };
}
