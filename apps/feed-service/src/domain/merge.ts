import { compareKeys, isAfter, type FeedKey } from './cursor';

/**
 * One page of a feed from several sources already in feed order (the materialised feed and the
 * large authors' posts merged at read time): everything after the cursor, newest first, duplicates
 * (the same post from two sources) once, at most `limit` items. Each source must hold at least
 * `limit` items after the cursor or all it has, so the page is exactly what one sorted source would
 * give.
 */
export function mergePage<T extends FeedKey>(
  sources: ReadonlyArray<ReadonlyArray<T>>,
  cursor: FeedKey | undefined,
  limit: number,
): T[] {
  const all = sources.flat().filter((item) => isAfter(item, cursor));
  all.sort(compareKeys);
  const out: T[] = [];
  const seen = new Set<string>();
  for (const item of all) {
    if (seen.has(item.postId)) continue;
    seen.add(item.postId);
    out.push(item);
    if (out.length === limit) break;
  }
  return out;
}
