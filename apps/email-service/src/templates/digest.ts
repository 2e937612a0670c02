import { escapeHtml, headerSafe } from './escape';
import { htmlDocument, textFooter, type Footer, type RenderedEmail } from './layout';
import { digestLineHtml, digestLineText, type NotificationView } from './notification';
import { STRINGS, type Lang } from './strings';

/** Lines listed in one digest; the rest is summarised ("and 12 more"). */
export const DIGEST_MAX_LINES = 50;

export interface DigestOptions {
  publicBaseUrl: string;
  period: 'daily' | 'hourly';
  unsubscribeUrl?: string;
  /** The email's language (templates/strings.ts `langOf`); English when absent. */
  lang?: Lang;
}

/**
 * The digest's lines: items of one group (same groupKey) collapse into one line, at the place of
 * the group's first item, linking to its latest; items without a groupKey are a line each.
 * `items` oldest first.
 */
export function digestLines(items: NotificationView[]): NotificationView[][] {
  const lines: NotificationView[][] = [];
  const groups = new Map<string, NotificationView[]>();
  for (const item of items) {
    const key = item.groupKey ? `${item.type}\u0000${item.groupKey}` : undefined;
    const group = key === undefined ? undefined : groups.get(key);
    if (group) group.push(item);
    else {
      const line = [item];
      lines.push(line);
      if (key !== undefined) groups.set(key, line);
    }
  }
  return lines;
}

/** One email listing every notification of a digest window (callers never pass an empty list). */
export function renderDigest(items: NotificationView[], options: DigestOptions): RenderedEmail {
  const lang = options.lang ?? 'en';
  const t = STRINGS[lang];
  const count = items.length;
  const title = t.digestTitle(options.period, count);
  const lines = digestLines(items);
  const shown = lines.slice(0, DIGEST_MAX_LINES);
  const more = lines.slice(DIGEST_MAX_LINES).reduce((n, line) => n + line.length, 0);
  const footer: Footer = {
    reason: t.digestReason(options.period),
    unsubscribeUrl: options.unsubscribeUrl,
    unsubscribeWhat: t.digestEmails,
    lang,
  };

  const text = [
    `${title}.`,
    '',
    ...shown.map((line) => digestLineText(line[line.length - 1], options.publicBaseUrl, lang, line)),
    more > 0 ? `  ${t.more(more)}` : '',
    '',
    textFooter(footer),
  ]
    .filter((line, i, all) => line !== '' || all[i - 1] !== '')
    .join('\n');

  const body = [
    `<p><strong>${escapeHtml(title)}</strong></p>`,
    '<ul>',
    ...shown.map((line) => digestLineHtml(line[line.length - 1], options.publicBaseUrl, lang, line)),
    '</ul>',
    more > 0 ? `<p>${escapeHtml(t.more(more))}</p>` : '',
  ]
    .filter(Boolean)
    .join('\n');

  return { subject: headerSafe(title), text, html: htmlDocument(title, body, footer) };
}
