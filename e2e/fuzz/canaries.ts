import type { Rng } from './random';

/**
 * PII canaries: unique email addresses and token strings seeded into the fuzz inputs. None may
 * appear in any log line, in any form a log could carry it: as is, URL-encoded, or (for an email)
 * its local part alone, which is what survives when only the '@' was encoded.
 */
export class Canaries {
  readonly emails: string[] = [];
  readonly tokens: string[] = [];

  constructor(private readonly rng: Rng) {}

  email(): string {
    const e = `pii.canary.${this.rng.hex(10)}@canary-mail.test`;
    this.emails.push(e);
    return e;
  }

  /** An opaque secret as an API key or session token looks. */
  token(): string {
    const t = `sk_canary_${this.rng.hex(24)}`;
    this.tokens.push(t);
    return t;
  }

  /** Needles to look for in the logs, each with the canary it stands for. */
  needles(): Array<{ needle: string; canary: string }> {
    const out: Array<{ needle: string; canary: string }> = [];
    for (const e of this.emails) {
      out.push({ needle: e.slice(0, e.indexOf('@')), canary: e });
      out.push({ needle: encodeURIComponent(e), canary: e });
    }
    for (const t of this.tokens) out.push({ needle: t, canary: t });
    return out;
  }
}

/** Every canary found in the given log lines, with the first line that carries it. */
export function leakedCanaries(lines: readonly string[], canaries: Canaries): Array<{ canary: string; line: string }> {
  const needles = canaries.needles();
  const leaks = new Map<string, string>();
  // Cheap prefilter: every needle contains 'canary'.
  for (const line of lines) {
    if (!line.includes('canary')) continue;
    for (const { needle, canary } of needles) {
      if (!leaks.has(canary) && line.includes(needle)) leaks.set(canary, line);
    }
  }
  return [...leaks].map(([canary, line]) => ({ canary, line }));
}
