import { escapeHtml, headerSafe } from './escape';
import { htmlDocument, textFooter, type Footer, type RenderedEmail } from './layout';
import { digestLineHtml, digestLineText, type NotificationView } from './notification';

/** Lines listed in one digest; the rest is summarised ("and 12 more"). */
export const DIGEST_MAX_LINES = 50;

export interface DigestOptions {
  publicBaseUrl: string;
  period: 'daily' | 'hourly';
  unsubscribeUrl?: string;
}

/** One email listing every notification of a digest window (callers never pass an empty list). */
export function renderDigest(items: NotificationView[], options: DigestOptions): RenderedEmail {
  const count = items.length;
  const noun = count === 1 ? 'notification' : 'notifications';
  const title = `Your ${options.period} digest: ${count} new ${noun}`;
  const shown = items.slice(0, DIGEST_MAX_LINES);
  const more = count - shown.length;
  const footer: Footer = {
    reason: `You receive this ${options.period} digest because of your notification settings.`,
    unsubscribeUrl: options.unsubscribeUrl,
    unsubscribeWhat: 'digest emails',
  };

  const text = [
    `${title}.`,
    '',
    ...shown.map((item) => digestLineText(item, options.publicBaseUrl)),
    more > 0 ? `  ... and ${more} more on the community.` : '',
    '',
    textFooter(footer),
  ]
    .filter((line, i, all) => line !== '' || all[i - 1] !== '')
    .join('\n');

  const body = [
    `<p><strong>${escapeHtml(title)}</strong></p>`,
    '<ul>',
    ...shown.map((item) => digestLineHtml(item, options.publicBaseUrl)),
    '</ul>',
    more > 0 ? `<p>... and ${more} more on the community.</p>` : '',
  ]
    .filter(Boolean)
    .join('\n');

  return { subject: headerSafe(title), text, html: htmlDocument(title, body, footer) };
}
