import { keysetCodec } from '@community/service';

/**
 * The feed's keyset cursor: the (publishedAt, postId) of the last item of a page, newest first.
 * Opaque to clients (base64url of JSON). Stable while posts arrive: a page starts strictly after
 * the last item of the previous one, so a new post (sorting above) can neither shift a page nor
 * repeat an item, as an offset would. Ties on publishedAt are broken by postId in code point
 * order, the order Redis gives sorted-set members of equal score and the database collation's.
 */
export interface FeedKey {
  /** publishedAt in epoch milliseconds (the sorted-set score). */
  at: number;
  postId: string;
}

const codec = keysetCodec<FeedKey>({
  parts: (key) => [key.at, key.postId],
  key: (at, postId) => ({ at, postId }),
  validId: (postId) => postId.length > 0 && postId.length <= 256 && !postId.includes('\u0000'),
});

export const encodeCursor = codec.encode;
/** undefined when the text is not a cursor this service issued. */
export const decodeCursor = codec.decode;

/** Code point order of two ids (not localeCompare): the order of Redis members and of the C.UTF-8 collation. */
export function compareIds(a: string, b: string): number {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return Buffer.compare(x, y);
}

/** Newest first: negative when `a` comes before `b` in a feed. */
export function compareKeys(a: FeedKey, b: FeedKey): number {
  if (a.at !== b.at) return b.at - a.at;
  return compareIds(b.postId, a.postId);
}

/** True when `key` comes strictly after `cursor` in the feed (is on a later page). */
export function isAfter(key: FeedKey, cursor: FeedKey | undefined): boolean {
  return cursor === undefined || compareKeys(cursor, key) < 0;
}
