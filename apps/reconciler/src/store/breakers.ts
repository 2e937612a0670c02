/**
 * Reads every `*_breaker_open` series (1 = open) from the services' Prometheus endpoints: the
 * breakers live in the services' memory (email-service's SMTP breaker), and /metrics is where
 * they already publish their state. Throws naming the URL when one does not answer.
 */
export async function readBreakers(urls: readonly string[]): Promise<{ source: string; series: string; open: boolean }[]> {
  const out: { source: string; series: string; open: boolean }[] = [];
  for (const url of urls) {
    let text: string;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(3_000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      text = await res.text();
    } catch (err) {
      throw new Error(`${url} did not answer (${(err as Error).message}): the breaker state there is unknown`);
    }
    for (const line of text.split('\n')) {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*_breaker_open)(\{[^}]*\})?\s+(\S+)/.exec(line);
      if (m) out.push({ source: url, series: `${m[1]}${m[2] ?? ''}`, open: Number(m[3]) >= 1 });
    }
  }
  return out;
}

/** The configured sources; `none` (or nothing) for none. */
export const breakerUrls = (list: string): string[] =>
  list
    .replace(/^none$/i, '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
