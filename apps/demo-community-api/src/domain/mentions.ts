/** At most this many distinct users are notified per comment: one comment must not fan out unbounded. */
export const MAX_MENTIONS = 20;

/** Handles looked up per comment at most (several handles may name one user, or nobody). */
export const MAX_HANDLES = 4 * MAX_MENTIONS;

// `@` + 1-64 handle characters, not preceded by a handle character, a dot or another `@`: so
// "ada@example.test" and "a.b@c" are not mentions, while "(@ada)" and "@ada," are.
const MENTION = /(?<![A-Za-z0-9_.@-])@([A-Za-z0-9_-]{1,64})/g;

/** The distinct handles of a text, lowercased, in order of first appearance. */
export function parseHandles(text: string): string[] {
  const seen = new Set<string>();
  for (const match of text.matchAll(MENTION)) seen.add(match[1].toLowerCase());
  return [...seen];
}

/**
 * Who a comment mentions, once its handles are resolved to user ids (store/users.ts resolves them:
 * a handle is a user id, else a display name without spaces that exactly one user has; the rule is
 * in apps/demo-community-api/README.md). The author is never mentioned by their own comment, each
 * user counts once however often they are named, in order of first mention, and only the first
 * MAX_MENTIONS users count.
 */
export function mentionedUsers(
  handles: readonly string[],
  resolved: ReadonlyMap<string, string>,
  authorId: string,
): string[] {
  const users: string[] = [];
  for (const handle of handles) {
    const id = resolved.get(handle);
    if (id && id !== authorId && !users.includes(id)) users.push(id);
  }
  return users.slice(0, MAX_MENTIONS);
}

/** Excerpts are previews (the contract allows 500 characters; notifications show far fewer). */
export function excerpt(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
