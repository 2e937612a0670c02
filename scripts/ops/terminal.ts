/**
 * Text from dead letters (bodies, error messages, headers) is written by whoever published the
 * message or threw the error, and `ops` prints it to an operator's terminal. A terminal obeys the
 * control characters in what it prints: ESC sequences (ANSI/VT: recolour, move the cursor, clear the
 * screen, rewrite the title, OSC 8 links, and on some terminals answer-back or write files), a bare
 * CR or backspaces that overwrite what was printed before, C1 controls (U+009B is CSI on its own),
 * and bidirectional overrides that reorder a line's characters on screen. So every such character
 * is shown escaped (`\x1b`, `\r`, `\u202e`), visibly, never interpreted.
 */

// C0 controls (but \n, handled per mode), DEL, C1 controls, and the Unicode bidi embeddings,
// overrides and isolates, plus the line and paragraph separators some terminals break lines on.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex
const UNSAFE_OR_NEWLINE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = {
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
  '\v': '\\v',
  '\u001b': '\\x1b',
};

function escapeChar(c: string): string {
  const named = NAMED[c];
  if (named) return named;
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * One value on one line: every control character escaped, newlines included (a message cannot
 * start a line of its own and pass for the CLI's output).
 */
export function terminalText(value: unknown): string {
  return String(value).replace(UNSAFE_OR_NEWLINE, escapeChar);
}

/**
 * A block the CLI laid out itself over several lines (pretty JSON): its newlines are kept, every
 * other control character is escaped. JSON.stringify already escapes C0 controls inside strings,
 * not C1 controls nor bidi overrides; the escapes used here keep JSON text valid JSON.
 */
export function terminalBlock(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code === 0x09 ? '\t' : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
