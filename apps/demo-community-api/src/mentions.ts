import type { PoolClient } from 'pg';

/** At most this many distinct users are notified per comment: one comment must not fan out unbounded. */
export const MAX_MENTIONS = 20;

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
 * Resolves handles to user ids. The rule (docs in apps/demo-community-api/README.md):
 * 1. A handle is a user id, compared case-insensitively (ids are lowercase): `@Ada` is user `ada`.
 * 2. Otherwise it is a display name with its spaces removed, compared case-insensitively
 *    (`@GraceHopper` is "Grace Hopper"), when exactly one user has that display name.
 * 3. Anything else stays plain text. The author is never mentioned by their own comment, each user
 *    counts once however often they are named, and only the first MAX_MENTIONS users count.
 */
export async function resolveMentions(tx: PoolClient, text: string, authorId: string): Promise<string[]> {
  const handles = parseHandles(text).slice(0, 4 * MAX_MENTIONS);
  if (handles.length === 0) return [];
  const byId = await tx.query<{ id: string }>('SELECT id FROM community_users WHERE id = ANY($1::text[])', [handles]);
  const resolved = new Map<string, string>(byId.rows.map((r) => [r.id, r.id]));
  const rest = handles.filter((h) => !resolved.has(h));
  if (rest.length > 0) {
    // Display names have no index: this scan only runs for handles that are not ids (rare).
    const byName = await tx.query<{ handle: string; id: string }>(
      `SELECT lower(replace(display_name, ' ', '')) AS handle, min(id) AS id
       FROM community_users
       WHERE lower(replace(display_name, ' ', '')) = ANY($1::text[])
       GROUP BY 1 HAVING count(*) = 1`,
      [rest],
    );
    for (const r of byName.rows) resolved.set(r.handle, r.id);
  }
  const users: string[] = [];
  for (const handle of handles) {
    const id = resolved.get(handle);
    if (id && id !== authorId && !users.includes(id)) users.push(id);
  }
  return users.slice(0, MAX_MENTIONS);
}
