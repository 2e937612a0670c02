/**
 * A small seeded generator: the same seed gives the same fuzz inputs, so a failure is replayed
 * with `FUZZ_SEED=<seed>`. mulberry32 is enough here: the inputs need variety and repeatability,
 * not cryptographic quality.
 */
export class Rng {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  hex(length: number): string {
    let s = '';
    while (s.length < length) s += this.int(0, 15).toString(16);
    return s;
  }

  uuid(): string {
    const h = this.hex(32);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${'89ab'[this.int(0, 3)]}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }
}

/** The seed of this run: FUZZ_SEED when given (to replay a failure), else a fresh one. */
export function runSeed(): number {
  const given = process.env.FUZZ_SEED;
  if (given !== undefined && given !== '') {
    const n = Number(given);
    if (!Number.isSafeInteger(n)) throw new Error(`FUZZ_SEED must be an integer, got "${given}"`);
    return n;
  }
  return Math.floor(Math.random() * 2 ** 31);
}

/** A positive count from an env knob, or the default. */
export function countFrom(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return n;
}
