/**
 * The console page (GET /console): one HTML document, its stylesheet and its script, no framework
 * and no build step: dlq-console.html, dlq-console.css and dlq-console.browser.js beside this
 * module, read once when it loads, at its `__dirname` (from the sources that is this folder; in a
 * bundle it is the bundle's, where scripts/dev/setup/bundle.mjs copies them, as it does the feed's
 * Lua scripts), so a missing file stops the process at start, not at the first page view. The
 * script and the styles are served as files of their own (GET /console/console.js,
 * /console/console.css), never inline: the page's Content-Security-Policy allows only scripts and styles from the reconciler itself, so
 * markup injected into the page, were any to get in, could not run (CONSOLE_CSP). It holds no
 * data: it asks for an admin token (kept in sessionStorage, gone with the tab) and calls
 * /v1/admin/dlq/* with it as a Bearer. When that token nears its end or is refused, the page asks
 * for a new one in place (the renewal box): filters, a preview and a running operation's progress
 * stay, the request that was refused is sent again with the new token, and a token of another
 * operator is refused (docs/DLQ-CONSOLE.md "Token renewal").
 * Every value from the API is written with textContent, never as HTML.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const asset = (file: string) => readFileSync(path.join(__dirname, file), 'utf8');

/** GET /console */
export const CONSOLE_HTML = asset('dlq-console.html');
/** GET /console/console.css */
export const CONSOLE_CSS = asset('dlq-console.css');
/** GET /console/console.js (runs once the document is parsed: `defer`). */
export const CONSOLE_JS = asset('dlq-console.browser.js');

/**
 * No inline script or style ('unsafe-inline' is gone), nothing from elsewhere, calls only to the
 * reconciler's own API, and no framing (clickjacking the Confirm button): frame-ancestors 'none'.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
