import type { BreakerReading, FlowControlReading, RateLimitReading } from '../domain/facts';

interface FlowControlBody {
  breakers?: Array<{ series?: unknown; lastError?: unknown; lastErrorAt?: unknown; pauses?: unknown }>;
  rateLimits?: Array<{ name?: unknown; perSecond?: unknown; queues?: unknown }>;
}

const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;

async function get(url: string): Promise<Response> {
  return fetch(url, { signal: AbortSignal.timeout(3_000) });
}

/**
 * Reads every `*_breaker_open` series (1 = open) from the services' Prometheus endpoints: the
 * breakers live in the services' memory (email-service's SMTP breaker), and /metrics is where
 * they already publish their state. Throws naming the URL when one does not answer.
 *
 * Then, from the same origin, `GET /v1/flow-control` (email-service's http/flow-control.ts): the
 * breaker's last error and the queues it pauses, and the rate limits the queues drain at. That is
 * JSON, not /metrics, because an error message must never become a label value. A service without
 * the route (404) or whose answer is unusable still has its breaker state read; only the "why" is
 * missing then.
 */
export async function readFlowControl(urls: readonly string[]): Promise<FlowControlReading> {
  const breakers: BreakerReading[] = [];
  const rateLimits: RateLimitReading[] = [];
  for (const url of urls) {
    let text: string;
    try {
      const res = await get(url);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      text = await res.text();
    } catch (err) {
      throw new Error(`${url} did not answer (${(err as Error).message}): the breaker state there is unknown`);
    }
    const found: BreakerReading[] = [];
    for (const line of text.split('\n')) {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*_breaker_open)(\{[^}]*\})?\s+(\S+)/.exec(line);
      if (m) found.push({ source: url, series: `${m[1]}${m[2] ?? ''}`, open: Number(m[3]) >= 1 });
    }
    const info = await get(new URL('/v1/flow-control', url).toString())
      .then(async (res) => (res.ok ? ((await res.json()) as FlowControlBody) : undefined))
      .catch(() => undefined);
    for (const b of found) {
      const about = info?.breakers?.find((x) => x.series === b.series);
      if (!about) continue;
      if (typeof about.lastError === 'string') b.lastError = about.lastError;
      if (typeof about.lastErrorAt === 'string' || about.lastErrorAt === null) b.lastErrorAt = about.lastErrorAt;
      b.pauses = strings(about.pauses);
    }
    breakers.push(...found);
    for (const r of info?.rateLimits ?? []) {
      const queues = strings(r.queues);
      if (typeof r.name === 'string' && typeof r.perSecond === 'number' && queues)
        rateLimits.push({ source: url, name: r.name, perSecond: r.perSecond, queues });
    }
  }
  return { breakers, rateLimits };
}

/** The breaker series alone (see readFlowControl). */
export async function readBreakers(urls: readonly string[]): Promise<BreakerReading[]> {
  return (await readFlowControl(urls)).breakers;
}

/** The configured sources; `none` (or nothing) for none. */
export const breakerUrls = (list: string): string[] =>
  list
    .replace(/^none$/i, '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
