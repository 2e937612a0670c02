/**
 * The push page's files (docs/PUSH.md "The browser page"): push-page.html, push-page.css,
 * push-page.browser.js and the service worker push-sw.browser.js beside this module, read once when
 * it loads, at its `__dirname` (from the sources that is this folder; in a bundle it is the
 * bundle's, where scripts/dev/setup/bundle.mjs copies them, as it does the DLQ console's page), so
 * a missing file stops the process at start, not at the first page view.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const asset = (file: string) => readFileSync(path.join(__dirname, file), 'utf8');

/** GET /push/ */
export const PAGE_HTML = asset('push-page.html');
/** GET /push/page.css */
export const PAGE_CSS = asset('push-page.css');
/** GET /push/page.js (runs once the document is parsed: `defer`). */
export const PAGE_JS = asset('push-page.browser.js');
/** GET /push/sw.js: the service worker, scope /push/. */
export const SERVICE_WORKER_JS = asset('push-sw.browser.js');

/**
 * No inline script or style, nothing from elsewhere, calls only to push-service's own API, the
 * worker from itself, and no framing.
 */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; worker-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
