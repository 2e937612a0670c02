import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The load generator and its ledger. Each request is a comment through the demo API (so its events
 * go through the API's outbox) mentioning two users; only an acknowledged request (201 with the
 * comment id) enters the ledger, so what the ledger holds is exactly what the system promised.
 * A request that failed during a fault is counted and not retried: the client was told "no".
 */
export interface LedgerEntry {
  commentId: string;
  /** Users the comment mentions: one notification each, and (mentions email by default) one email each. */
  mentioned: string[];
}

export class Ledger {
  readonly entries: LedgerEntry[] = [];
  /** Answers other than 201, by status: a 5xx during a dependency fault is worth a look (503 is the honest one). */
  readonly refused = new Map<number, number>();
  transportErrors = 0;

  get failedRequests(): number {
    return [...this.refused.values()].reduce((a, b) => a + b, 0) + this.transportErrors;
  }

  /** Mentions the ledger expects per user (for the email and counter checks). */
  perUser(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const e of this.entries) for (const u of e.mentioned) counts.set(u, (counts.get(u) ?? 0) + 1);
    return counts;
  }

  get mentions(): number {
    return this.entries.reduce((n, e) => n + e.mentioned.length, 0);
  }
}

export interface LoadOptions {
  apiUrl: () => string;
  postId: string;
  author: string;
  users: string[];
  /** Mention events per second (two per request). */
  eventsPerSecond: number;
  /** Stop once this many mention events are acknowledged and `until` resolved. */
  events: number;
  until: Promise<unknown>;
  ledger: Ledger;
}

const MAX_IN_FLIGHT = 64;

export async function runLoad(o: LoadOptions): Promise<{ sent: number; ms: number }> {
  const started = Date.now();
  const intervalMs = 2000 / o.eventsPerSecond;
  let done = false;
  void o.until.then(() => { done = true; }, () => { done = true; });
  const inFlight = new Set<Promise<void>>();
  let sent = 0;
  let acked = 0;
  while (!(done && acked * 2 >= o.events)) {
    const due = started + sent * intervalMs;
    const wait = due - Date.now();
    if (wait > 0) await sleep(wait);
    if (inFlight.size >= MAX_IN_FLIGHT) {
      await Promise.race(inFlight);
      continue;
    }
    const n = sent++;
    const mentioned = [o.users[n % o.users.length], o.users[(n * 7 + 3) % o.users.length]];
    if (mentioned[0] === mentioned[1]) mentioned[1] = o.users[(n + 1) % o.users.length];
    const p = postComment(o, `chaos ${n}: @${mentioned[0]} and @${mentioned[1]}`).then((id) => {
      if (id) {
        o.ledger.entries.push({ commentId: id, mentioned });
        acked++;
      }
    }).finally(() => inFlight.delete(p));
    inFlight.add(p);
  }
  await Promise.all(inFlight);
  return { sent, ms: Date.now() - started };
}

async function postComment(o: LoadOptions, body: string): Promise<string | undefined> {
  try {
    const res = await fetch(`${o.apiUrl()}/v1/posts/${o.postId}/comments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': o.author },
      body: JSON.stringify({ body }),
      signal: AbortSignal.timeout(10_000),
    });
    const json = (await res.json().catch(() => ({}))) as { id?: string };
    if (res.status === 201 && json.id) return json.id;
    o.ledger.refused.set(res.status, (o.ledger.refused.get(res.status) ?? 0) + 1);
  } catch {
    o.ledger.transportErrors++;
  }
  return undefined;
}
