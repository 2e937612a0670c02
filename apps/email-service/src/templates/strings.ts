import type { NotificationType } from '@community/contracts';

/**
 * The words of every email, per language (docs/EMAIL.md "Languages"). English is the default;
 * Indonesian for a user whose locale (user.upserted's `locale`) is `id` or `id-*`. Only constant
 * text lives here: user-supplied values are escaped by the templates, in every language alike.
 */
export type Lang = 'en' | 'id';

/** `id`, `id-ID`, `ID_id` … → Indonesian; anything else, or no locale → English. */
export function langOf(locale: string | null | undefined): Lang {
  return locale && /^id(?:[-_].*)?$/i.test(locale.trim()) ? 'id' : 'en';
}

export interface Strings {
  /** Who did it, when the actor is unknown or deleted (start of a sentence, and inside one). */
  someone: string;
  someoneInside: string;
  /** Resource words; anything a producer sends that is not one of them reads as `content`. */
  resource: { post: string; comment: string; content: string };
  /** What happened, after the actor(s): "reacted to your post". */
  predicate(type: Exclude<NotificationType, 'security_alert'>, resource: string): string;
  securityAlertTitle: string;
  securityAdvice: string;
  /** "Ana", "Ana and Budi", "Ana, Budi and 3 others" (the names are already safe for the part). */
  actors(names: string[], others: number): string;
  typeLabel: Record<NotificationType, string>;
  /** Footer of a locked type (security alerts): always sent. */
  lockedReason(label: string): string;
  settingsReason: string;
  viewText: string;
  viewHtml: string;
  unsubscribeFrom(what: string): string;
  theseEmails: string;
  digestTitle(period: 'daily' | 'hourly', count: number): string;
  digestReason(period: 'daily' | 'hourly'): string;
  digestEmails: string;
  more(count: number): string;
}

const capitalised = (s: string) => `${s.charAt(0).toUpperCase()}${s.slice(1)}`;

const en: Strings = {
  someone: 'Someone',
  someoneInside: 'someone',
  resource: { post: 'post', comment: 'comment', content: 'content' },
  predicate(type, resource) {
    switch (type) {
      case 'mention':
        return 'mentioned you in a comment';
      case 'reply':
        return 'replied to your comment';
      case 'comment':
        return 'commented on your post';
      case 'reaction':
        return `reacted to your ${resource}`;
      case 'follow':
        return 'started following you';
    }
  },
  securityAlertTitle: 'Security alert on your account',
  securityAdvice: 'If this was not you, change your password now.',
  actors(names, others) {
    if (others > 0) return `${names.join(', ')} and ${others} ${others === 1 ? 'other' : 'others'}`;
    return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
  },
  typeLabel: {
    mention: 'mention emails',
    reply: 'reply emails',
    comment: 'emails about comments on your posts',
    reaction: 'reaction emails',
    follow: 'new-follower emails',
    security_alert: 'security alerts',
  },
  lockedReason: (label) => `${capitalised(label)} are always sent, whatever your notification settings.`,
  settingsReason: 'You receive this email because of your notification settings.',
  viewText: 'View it',
  viewHtml: 'View it on the community',
  unsubscribeFrom: (what) => `Unsubscribe from ${what}`,
  theseEmails: 'these emails',
  digestTitle: (period, count) =>
    `Your ${period} digest: ${count} new ${count === 1 ? 'notification' : 'notifications'}`,
  digestReason: (period) => `You receive this ${period} digest because of your notification settings.`,
  digestEmails: 'digest emails',
  more: (count) => `... and ${count} more on the community.`,
};

const ID_PERIOD = { daily: 'harian', hourly: 'per jam' } as const;

const id: Strings = {
  someone: 'Seseorang',
  someoneInside: 'seseorang',
  resource: { post: 'postingan', comment: 'komentar', content: 'konten' },
  predicate(type, resource) {
    switch (type) {
      case 'mention':
        return 'menyebut Anda dalam sebuah komentar';
      case 'reply':
        return 'membalas komentar Anda';
      case 'comment':
        return 'mengomentari postingan Anda';
      case 'reaction':
        return `menanggapi ${resource} Anda`;
      case 'follow':
        return 'mulai mengikuti Anda';
    }
  },
  securityAlertTitle: 'Peringatan keamanan di akun Anda',
  securityAdvice: 'Jika ini bukan Anda, segera ubah kata sandi Anda.',
  actors(names, others) {
    if (others > 0) return `${names.join(', ')}${names.length > 1 ? ',' : ''} dan ${others} lainnya`;
    return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} dan ${names[names.length - 1]}`;
  },
  typeLabel: {
    mention: 'email sebutan',
    reply: 'email balasan',
    comment: 'email tentang komentar di postingan Anda',
    reaction: 'email tanggapan',
    follow: 'email pengikut baru',
    security_alert: 'peringatan keamanan',
  },
  lockedReason: (label) => `${capitalised(label)} selalu dikirim, apa pun pengaturan notifikasi Anda.`,
  settingsReason: 'Anda menerima email ini karena pengaturan notifikasi Anda.',
  viewText: 'Lihat',
  viewHtml: 'Lihat di komunitas',
  unsubscribeFrom: (what) => `Berhenti berlangganan ${what}`,
  theseEmails: 'email ini',
  digestTitle: (period, count) => `Ringkasan ${ID_PERIOD[period]} Anda: ${count} notifikasi baru`,
  digestReason: (period) => `Anda menerima ringkasan ${ID_PERIOD[period]} ini karena pengaturan notifikasi Anda.`,
  digestEmails: 'email ringkasan',
  more: (count) => `... dan ${count} lainnya di komunitas.`,
};

export const STRINGS: Record<Lang, Strings> = { en, id };
