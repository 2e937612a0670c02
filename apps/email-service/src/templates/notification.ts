import { PREFERENCE_LOCKED_TYPES, type NotificationType } from '@community/contracts';
import { blockHtml, escapeHtml, headerSafe, inlineHtml } from './escape';
import { htmlDocument, notificationUrl, textFooter, type Footer, type RenderedEmail } from './layout';

/** A notification as the templates see it (from notification.created or a digest item). */
export interface NotificationView {
  type: NotificationType;
  notificationId: string;
  /** The actor's display name from the users projection; undefined when unknown or absent. */
  actorName?: string;
  resourceType: string;
  excerpt?: string;
}

export interface RenderOptions {
  publicBaseUrl: string;
  unsubscribeUrl?: string;
}

// Only known words reach the sentence; anything else a producer sends reads as "content".
const RESOURCE_WORDS: Record<string, string> = { post: 'post', comment: 'comment' };
const resourceWord = (resourceType: string) => RESOURCE_WORDS[resourceType] ?? 'content';

/** The sentence that says what happened, as plain text (callers escape it for HTML). */
export function headline(view: NotificationView): string {
  const actor = view.actorName ? headerSafe(view.actorName, 100) : 'Someone';
  switch (view.type) {
    case 'mention':
      return `${actor} mentioned you in a comment`;
    case 'reply':
      return `${actor} replied to your comment`;
    case 'comment':
      return `${actor} commented on your post`;
    case 'reaction':
      return `${actor} reacted to your ${resourceWord(view.resourceType)}`;
    case 'follow':
      return `${actor} started following you`;
    case 'security_alert':
      return 'Security alert on your account';
  }
}

const TYPE_LABEL: Record<NotificationType, string> = {
  mention: 'mention emails',
  reply: 'reply emails',
  comment: 'emails about comments on your posts',
  reaction: 'reaction emails',
  follow: 'new-follower emails',
  security_alert: 'security alerts',
};

export function unsubscribeLabel(type: NotificationType): string {
  return TYPE_LABEL[type];
}

/** One notification, one email: mention, reply, comment-on-post, reaction, follow, security alert. */
export function renderNotification(view: NotificationView, options: RenderOptions): RenderedEmail {
  const title = headline(view);
  const link = notificationUrl(options.publicBaseUrl, view.notificationId);
  // A locked type (a security alert) cannot be muted: the email says so and offers no unsubscribe link.
  const locked = PREFERENCE_LOCKED_TYPES.includes(view.type);
  // Wording of this type only (what to do about it), not the mute rule.
  const security = view.type === 'security_alert';
  const label = TYPE_LABEL[view.type];
  const footer: Footer = {
    reason: locked
      ? `${label.charAt(0).toUpperCase()}${label.slice(1)} are always sent, whatever your notification settings.`
      : 'You receive this email because of your notification settings.',
    unsubscribeUrl: locked ? undefined : options.unsubscribeUrl,
    unsubscribeWhat: unsubscribeLabel(view.type),
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
    security ? '\nIf this was not you, change your password now.' : '',
    `\nView it: ${link}`,
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
    security ? '<p>If this was not you, change your password now.</p>' : '',
    `<p><a href="${escapeHtml(link)}">View it on the community</a></p>`,
  ]
    .filter(Boolean)
    .join('\n');

  return { subject: headerSafe(title), text, html: htmlDocument(title, body, footer) };
}

/** For digest lines: the headline, escaped, with a link. */
export function digestLineHtml(view: NotificationView, publicBaseUrl: string): string {
  const link = notificationUrl(publicBaseUrl, view.notificationId);
  const excerpt = view.excerpt?.trim() ? `<br><span style="color:#555">${inlineHtml(view.excerpt)}</span>` : '';
  return `<li><a href="${escapeHtml(link)}">${escapeHtml(headline(view))}</a>${excerpt}</li>`;
}

export function digestLineText(view: NotificationView, publicBaseUrl: string): string {
  const excerpt = view.excerpt?.trim() ? `\n    "${headerSafe(view.excerpt, 160)}"` : '';
  return `  - ${headline(view)}: ${notificationUrl(publicBaseUrl, view.notificationId)}${excerpt}`;
}
