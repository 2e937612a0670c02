/** The demo community: computing pioneers, so the notifications read like a real developer forum. */
const PEOPLE: Array<[handle: string, name: string, locale: string]> = [
  ['ada', 'Ada Lovelace', 'en'],
  ['grace', 'Grace Hopper', 'en'],
  ['alan', 'Alan Turing', 'en-GB'],
  ['linus', 'Linus Torvalds', 'fi'],
  ['margaret', 'Margaret Hamilton', 'en'],
  ['barbara', 'Barbara Liskov', 'en'],
  ['ken', 'Ken Thompson', 'en'],
  ['dennis', 'Dennis Ritchie', 'en'],
  ['radia', 'Radia Perlman', 'en'],
  ['edsger', 'Edsger Dijkstra', 'nl'],
  ['donald', 'Donald Knuth', 'en'],
  ['frances', 'Frances Allen', 'en'],
  ['katherine', 'Katherine Johnson', 'en'],
  ['tim', 'Tim Berners-Lee', 'en-GB'],
  ['anita', 'Anita Borg', 'en'],
  ['lynn', 'Lynn Conway', 'en'],
  ['guido', 'Guido van Rossum', 'nl'],
  ['yukihiro', 'Yukihiro Matsumoto', 'ja'],
  ['sophie', 'Sophie Wilson', 'en-GB'],
  ['onno', 'Onno Purbo', 'id'],
];

export interface Person {
  id: string;
  email: string;
  displayName: string;
  locale: string;
}

/** `count` people: the list above, then numbered namesakes (`ada2@example.test`) for bigger runs. */
export function people(count: number): Person[] {
  return Array.from({ length: count }, (_, i) => {
    const [handle, name, locale] = PEOPLE[i % PEOPLE.length];
    const round = Math.floor(i / PEOPLE.length);
    const id = round === 0 ? handle : `${handle}${round + 1}`;
    return { id, email: `${id}@example.test`, displayName: round === 0 ? name : `${name} ${round + 1}`, locale };
  });
}

export const POST_TITLES = [
  'Retry storms and how we stopped ours',
  'Idempotency keys in practice',
  'Why our email queue lives apart from mentions',
  'Dead letter queues are not a trash can',
  'Ordering per user, not globally',
  'Cache is not the source of truth',
  'Visibility timeouts, leases and duplicate jobs',
  'Antrean terpisah untuk notifikasi kritis',
  'Backoff eksponensial: 1s, 4s, 16s',
  'A checklist for volunteer on-call shifts',
];

export const COMMENTS = [
  'Great write-up, this matches what we saw in production.',
  'Have you measured the p99 with the new backoff?',
  'We had the same duplicate emails until we added a unique key.',
  'Mantap, terima kasih sudah berbagi!',
  'What happens when the broker restarts mid-batch?',
  'Could the DLQ replay be filtered by cause?',
  'Setuju, idempotensi itu wajib untuk at-least-once.',
  'This saved my weekend, thanks.',
];

export const EMOJI = ['👍', '🎉', '❤️', '🚀', '👀', '🙏'];
