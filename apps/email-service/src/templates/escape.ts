/**
 * The two rules every template follows for user-supplied values (display names, excerpts, ids):
 * HTML-escape them in the HTML part, and strip line breaks from anything that ends up in a header.
 */

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Safe in HTML text and in double- or single-quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

// CR and LF end a header line (header injection: "Eve\r\nBcc: victim@example.com"); the other C0
// controls, DEL and the Unicode line/paragraph separators have no business in a header either.
// eslint-disable-next-line no-control-regex
const HEADER_UNSAFE = /[\u0000-\u001f\u007f\u2028\u2029]+/g;

/** One line, no control characters, trimmed and bounded: for Subject, display names, any header. */
export function headerSafe(value: string, maxLength = 200): string {
  const line = value
    .replace(HEADER_UNSAFE, ' ')
    .replace(/\s{2,}/g, ' ')
    .trim();
  return line.length > maxLength ? `${line.slice(0, maxLength - 1)}…` : line;
}

/** Escapes a value for the HTML part after making it one line (names, not excerpts). */
export function inlineHtml(value: string): string {
  return escapeHtml(headerSafe(value));
}

/** An excerpt for the HTML part: escaped, its line breaks kept as <br>. */
export function blockHtml(value: string): string {
  return escapeHtml(value.replace(/\r\n?/g, '\n')).replace(/\n/g, '<br>');
}
