/** Hostile strings for params, query, bodies and message fields. */
export const INJECTIONS: readonly string[] = [
  "' OR '1'='1",
  "'; DROP TABLE notifications; --",
  '" OR ""="',
  '1; SELECT pg_sleep(10)--',
  "x' UNION SELECT email FROM community_users--",
  '$1',
  '../../../../etc/passwd',
  '..%2f..%2f..%2fetc%2fpasswd',
  '..\\..\\windows\\win.ini',
  '/./././',
  '%00',
  'a\u0000b',
  '\u0000',
  'line\r\nSet-Cookie: pwned=1',
  'x\r\nX-Injected: 1',
  '\ud800',
  'tail\udfff',
  '<script>alert(1)</script>',
  '{{7*7}}',
  '${jndi:ldap://x/a}',
  '__proto__',
  'constructor',
  '{"$ne":null}',
  '*',
  '%',
  '\\',
  'null',
  'undefined',
  '-1',
  '9'.repeat(40),
  '\u202e\u0644\u0627',
  '😀'.repeat(30),
  'x'.repeat(300),
];

/** encodeURIComponent, except that a lone surrogate becomes its (invalid) 3-byte form instead of a throw. */
export function enc(s: string): string {
  let out = '';
  for (const ch of s) {
    const cu = ch.charCodeAt(0);
    out +=
      ch.length === 1 && cu >= 0xd800 && cu <= 0xdfff
        ? `%ED%${(0x80 | ((cu >> 6) & 0x3f)).toString(16).toUpperCase()}%${(0x80 | (cu & 0x3f)).toString(16).toUpperCase()}`
        : encodeURIComponent(ch);
  }
  return out;
}

/** Hostile ids the demo API's user id pattern refuses. */
export const BAD_USER_IDS = INJECTIONS.filter((s) => !/^[a-z0-9_-]{1,64}$/.test(s));
/** Values fetch can put in a header (no CR, LF, NUL, nothing above 0xFF). */
export const HEADER_SAFE = INJECTIONS.filter((s) => /^[\x20-\x7e]*$/.test(s));
export const json = (v: unknown) => JSON.stringify(v);
