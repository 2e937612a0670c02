import type { EmailConfig } from '../config';
import { messageIdDomain, messageIdFor } from '../message-id';
import type { OutgoingEmail } from '../smtp/sender';
import type { EmailUserRow } from '../store/users';
import type { DigestPeriod } from '../domain/digest-window';
import { sendPriority } from '../domain/lanes';
import { renderDigest } from '../templates/digest';
import { headerSafe } from '../templates/escape';
import type { RenderedEmail } from '../templates/layout';
import { renderNotification, type NotificationView } from '../templates/notification';
import { langOf } from '../templates/strings';
import {
  isUnsubscribeScope,
  unsubscribeUrl,
  type UnsubscribeScope,
  type UnsubscribeTokens,
} from '../unsubscribe/token';

export interface ComposerOptions {
  publicBaseUrl: string;
  unsubscribeBaseUrl: string;
  messageIdDomain: string;
  digestPeriod: DigestPeriod;
  tokens: UnsubscribeTokens;
}

/** The composer the service uses, configured from PUBLIC_BASE_URL, UNSUBSCRIBE_BASE_URL, EMAIL_FROM and DIGEST_PERIOD. */
export function createComposer(config: EmailConfig, tokens: UnsubscribeTokens): Composer {
  return new Composer({
    publicBaseUrl: config.PUBLIC_BASE_URL,
    unsubscribeBaseUrl: config.UNSUBSCRIBE_BASE_URL,
    messageIdDomain: messageIdDomain(config.EMAIL_FROM),
    digestPeriod: config.DIGEST_PERIOD,
    tokens,
  });
}

/** Turns a rendered template into an email: recipient, Message-ID, and the list headers. */
export class Composer {
  constructor(private readonly options: ComposerOptions) {}

  notification(user: EmailUserRow, view: NotificationView, idempotencyKey: string): OutgoingEmail {
    // A locked type (security alert) cannot be muted, so its email offers no unsubscribe link.
    const scope = isUnsubscribeScope(view.type) ? view.type : undefined;
    const unsubscribe = scope ? this.unsubscribeUrl(user.userId, scope) : undefined;
    const rendered = renderNotification(view, {
      publicBaseUrl: this.options.publicBaseUrl,
      unsubscribeUrl: unsubscribe,
      lang: langOf(user.locale),
    });
    const mail = this.envelope(
      user,
      rendered,
      messageIdFor('immediate', idempotencyKey, this.options.messageIdDomain),
      unsubscribe,
    );
    return { ...mail, priority: sendPriority(view.type) };
  }

  digest(user: EmailUserRow, items: NotificationView[], idempotencyKey: string): OutgoingEmail {
    const unsubscribe = this.unsubscribeUrl(user.userId, 'digest');
    const rendered = renderDigest(items, {
      publicBaseUrl: this.options.publicBaseUrl,
      period: this.options.digestPeriod,
      unsubscribeUrl: unsubscribe,
      lang: langOf(user.locale),
    });
    return this.envelope(
      user,
      rendered,
      messageIdFor('digest', idempotencyKey, this.options.messageIdDomain),
      unsubscribe,
    );
  }

  digestMessageId(idempotencyKey: string): string {
    return messageIdFor('digest', idempotencyKey, this.options.messageIdDomain);
  }

  immediateMessageId(idempotencyKey: string): string {
    return messageIdFor('immediate', idempotencyKey, this.options.messageIdDomain);
  }

  private unsubscribeUrl(userId: string, scope: UnsubscribeScope): string {
    return unsubscribeUrl(this.options.unsubscribeBaseUrl, this.options.tokens.sign({ userId, scope }));
  }

  private envelope(
    user: EmailUserRow,
    rendered: RenderedEmail,
    messageId: string,
    unsubscribe: string | undefined,
  ): OutgoingEmail {
    // RFC 3834: an automated message; stops vacation auto-replies from answering it.
    const headers: Record<string, string> = { 'Auto-Submitted': 'auto-generated' };
    if (unsubscribe) {
      // RFC 2369 + RFC 8058: mail clients show an unsubscribe button that POSTs
      // "List-Unsubscribe=One-Click" to this URL without opening a page.
      headers['List-Unsubscribe'] = `<${unsubscribe}>`;
      headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
    }
    return {
      messageId,
      to: { name: headerSafe(user.displayName, 100), address: headerSafe(user.email, 254) },
      subject: headerSafe(rendered.subject),
      text: rendered.text,
      html: rendered.html,
      headers,
    };
  }
}
