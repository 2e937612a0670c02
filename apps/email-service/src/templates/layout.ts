import { escapeHtml } from './escape';
import { STRINGS, type Lang } from './strings';

/** What every rendered email has: a subject and its two parts. */
export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

export interface Footer {
  /** Absent for security alerts, which cannot be unsubscribed from. */
  unsubscribeUrl?: string;
  /** "mention emails", "the digest", ... */
  unsubscribeWhat?: string;
  /** Why the user gets this email. */
  reason: string;
  /** The email's language (templates/strings.ts); English when absent. */
  lang?: Lang;
}

/**
 * The HTML shell. `bodyHtml` must already be escaped by the caller; only constants and escaped
 * values are interpolated here.
 */
export function htmlDocument(title: string, bodyHtml: string, footer: Footer): string {
  const lang = footer.lang ?? 'en';
  const t = STRINGS[lang];
  const unsubscribe = footer.unsubscribeUrl
    ? ` <a href="${escapeHtml(footer.unsubscribeUrl)}">${escapeHtml(t.unsubscribeFrom(footer.unsubscribeWhat ?? t.theseEmails))}</a>.`
    : '';
  return [
    '<!doctype html>',
    `<html lang="${lang}"><head><meta charset="utf-8">`,
    `<title>${escapeHtml(title)}</title></head>`,
    '<body style="font-family:sans-serif;line-height:1.5;color:#222;max-width:600px">',
    bodyHtml,
    `<hr><p style="font-size:12px;color:#666">${escapeHtml(footer.reason)}${unsubscribe}</p>`,
    '</body></html>',
  ].join('\n');
}

export function textFooter(footer: Footer): string {
  const t = STRINGS[footer.lang ?? 'en'];
  const lines = ['--', footer.reason];
  if (footer.unsubscribeUrl)
    lines.push(`${t.unsubscribeFrom(footer.unsubscribeWhat ?? t.theseEmails)}: ${footer.unsubscribeUrl}`);
  return lines.join('\n');
}

/** `PUBLIC_BASE_URL/notifications/<id>`: every email links to the notification it is about. */
export function notificationUrl(publicBaseUrl: string, notificationId: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/notifications/${encodeURIComponent(notificationId)}`;
}
