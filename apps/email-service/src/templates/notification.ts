import { PREFERENCE_LOCKED_TYPES, type NotificationType } from '@community/contracts';
import { blockHtml, escapeHtml, headerSafe, inlineHtml } from './escape';
import { htmlDocument, notificationUrl, textFooter, type Footer, type RenderedEmail } from './layout';
import { STRINGS, type Lang, type Strings } from './strings';

/** A notification as the templates see it (from notification.created or a digest item). */
export interface NotificationView {
  type: NotificationType;
  notificationId: string;
  /** The actor's display name from the users projection; undefined when unknown or absent. */
  actorName?: string;
  /** Who the actor is, to count distinct actors in a digest group; null/absent: unknown or deleted. */
  actorId?: string | null;
  resourceType: string;
  excerpt?: string;
  /** The inbox group (notification.created's groupKey): digest lines of one group collapse. */
  groupKey?: string | null;
}

export interface RenderOptions {
  publicBaseUrl: string;
  unsubscribeUrl?: string;
  /** The email's language (templates/strings.ts `langOf`); English when absent. */
  lang?: Lang;
}

// Only known words reach the sentence; anything else a producer sends reads as "content".
function resourceWord(t: Strings, resourceType: string): string {
  return resourceType === 'post' || resourceType === 'comment' ? t.resource[resourceType] : t.resource.content;
}

/** The sentence that says what happened, as plain text (callers escape it for HTML). */
export function headline(view: NotificationView, lang: Lang = 'en'): string {
  const t = STRINGS[lang];
  if (view.type === 'security_alert') return t.securityAlertTitle;
  const actor = view.actorName ? headerSafe(view.actorName, 100) : t.someone;
  return `${actor} ${t.predicate(view.type, resourceWord(t, view.resourceType))}`;
}

/**
 * The sentence of a digest group (oldest member first): the latest two distinct actors, then "and
 * N others" (a deleted or unknown actor is "someone"), and what happened. Plain text.
 */
export function groupHeadline(members: NotificationView[], lang: Lang = 'en'): string {
  const t = STRINGS[lang];
  const latest = members[members.length - 1];
  const seen = new Set<string>();
  const actors: string[] = [];
  for (const m of [...members].reverse()) {
    const who = m.actorId && m.actorName ? m.actorId : '';
    if (seen.has(who)) continue;
    seen.add(who);
    actors.push(who === '' ? '' : headerSafe(m.actorName ?? '', 100));
  }
  const names = actors.slice(0, 2).map((a, i) => (a !== '' ? a : i === 0 ? t.someone : t.someoneInside));
  const who = t.actors(names, actors.length - names.length);
  return `${who} ${t.predicate(latest.type as Exclude<NotificationType, 'security_alert'>, resourceWord(t, latest.resourceType))}`;
}

export function unsubscribeLabel(type: NotificationType, lang: Lang = 'en'): string {
  return STRINGS[lang].typeLabel[type];
}

/** One notification, one email: mention, reply, comment-on-post, reaction, follow, security alert. */
export function renderNotification(view: NotificationView, options: RenderOptions): RenderedEmail {
  const lang = options.lang ?? 'en';
  const t = STRINGS[lang];
  const title = headline(view, lang);
  const link = notificationUrl(options.publicBaseUrl, view.notificationId);
  // A locked type (a security alert) cannot be muted: the email says so and offers no unsubscribe link.
  const locked = PREFERENCE_LOCKED_TYPES.includes(view.type);
  // Wording of this type only (what to do about it), not the mute rule.
  const security = view.type === 'security_alert';
  const label = unsubscribeLabel(view.type, lang);
  const footer: Footer = {
    reason: locked ? t.lockedReason(label) : t.settingsReason,
    unsubscribeUrl: locked ? undefined : options.unsubscribeUrl,
    unsubscribeWhat: label,
    lang,
  };
  const excerpt = view.excerpt?.trim() ? view.excerpt.trim() : undefined;

  const text = [
    `${title}.`,
    excerpt
      ? `\n${excerpt
          .split(/\r\n?|\n/)
          .map((l) => `> ${l}`)
          .join('\n')}`
      : '',
    security ? `\n${t.securityAdvice}` : '',
    `\n${t.viewText}: ${link}`,
    '',
    textFooter(footer),
  ]
    .filter((part) => part !== '')
    .join('\n');

  const body = [
    `<p><strong>${escapeHtml(title)}</strong></p>`,
    excerpt
      ? `<blockquote style="border-left:3px solid #ccc;margin:0;padding-left:12px">${blockHtml(excerpt)}</blockquote>`
      : '',
    security ? `<p>${escapeHtml(t.securityAdvice)}</p>` : '',
    `<p><a href="${escapeHtml(link)}">${escapeHtml(t.viewHtml)}</a></p>`,
  ]
    .filter(Boolean)
    .join('\n');

  return { subject: headerSafe(title), text, html: htmlDocument(title, body, footer) };
}

/**
 * For digest lines: the headline (of one notification, or of a group: `members`, oldest first,
 * linking to the latest, which is the inbox item), escaped, with a link.
 */
export function digestLineHtml(
  view: NotificationView,
  publicBaseUrl: string,
  lang: Lang = 'en',
  members?: NotificationView[],
): string {
  const link = notificationUrl(publicBaseUrl, view.notificationId);
  const title = members && members.length > 1 ? groupHeadline(members, lang) : headline(view, lang);
  const excerpt = view.excerpt?.trim() ? `<br><span style="color:#555">${inlineHtml(view.excerpt)}</span>` : '';
  return `<li><a href="${escapeHtml(link)}">${escapeHtml(title)}</a>${excerpt}</li>`;
}

export function digestLineText(
  view: NotificationView,
  publicBaseUrl: string,
  lang: Lang = 'en',
  members?: NotificationView[],
): string {
  const title = members && members.length > 1 ? groupHeadline(members, lang) : headline(view, lang);
  const excerpt = view.excerpt?.trim() ? `\n    "${headerSafe(view.excerpt, 160)}"` : '';
  return `  - ${title}: ${notificationUrl(publicBaseUrl, view.notificationId)}${excerpt}`;
}
