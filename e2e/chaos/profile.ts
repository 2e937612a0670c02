// The fault suite's profiles and settings (CHAOS_SUITE, CHAOS_PROFILE and the overrides), read once
// from the environment when the suite starts (run.ts says what each means).
export interface Profile {
  rounds: number;
  /** Rounds of the whole run, spread over the selected faults (ceil(total / faults) each); CHAOS_ROUNDS overrides. */
  totalRounds?: number;
  rate: number;
  /** How long a fault is held ("30 s" in the issue). */
  holdMs: number;
  /** SIGKILLs of each app per kill fault, each with work in hand. The short profile kills once: a second
   * and third kill repeat the same fault (kill, restart, redelivery) and cost a restart each. */
  kills: number;
  /** Postgres unreachable ("60 s"). */
  pgHoldMs: number;
  /** close_all_connections every 5 s for this long ("a minute"). */
  closeForMs: number;
  /** How long to wait for the first effect after a heal, and for the drain, before calling it a failure. */
  recoverMs: number;
  drainMs: number;
  /** Extra environment of the apps: shorter leases and timeouts so the short profile's drains fit in CI. */
  appEnv: Record<string, string>;
}

export const SHORT_TIMEOUTS = {
  // The kill of email-service leaves its in-flight sends leased; a 10 s lease (default 2 min) lets
  // the short profile drain in seconds. It must exceed 2 × connection + socket timeout (config check).
  EMAIL_LEASE_MS: '10000',
  SMTP_CONNECTION_TIMEOUT_MS: '2000',
  SMTP_SOCKET_TIMEOUT_MS: '5000',
  SMTP_BREAKER_PROBE_MAX_MS: '2000',
};
export const PROFILES: Record<string, Profile> = {
  short: {
    rounds: 9,
    rate: 3,
    holdMs: 4_000,
    kills: 1,
    pgHoldMs: 6_000,
    closeForMs: 10_000,
    recoverMs: 120_000,
    drainMs: 240_000,
    appEnv: SHORT_TIMEOUTS,
  },
  mid: {
    rounds: 150,
    rate: 8,
    holdMs: 15_000,
    kills: 3,
    pgHoldMs: 30_000,
    closeForMs: 30_000,
    recoverMs: 300_000,
    drainMs: 600_000,
    appEnv: SHORT_TIMEOUTS,
  },
  // 10,400 rounds over the whole run (800 for each of 13 faults, 740 of 14), so that every event
  // type a round produces once reaches ≥ 10,000 whatever CHAOS_FAULTS selects; the holds of the issue; product defaults.
  full: {
    rounds: 0,
    totalRounds: 10_400,
    rate: 10,
    holdMs: 30_000,
    kills: 3,
    pgHoldMs: 60_000,
    closeForMs: 60_000,
    recoverMs: 600_000,
    drainMs: 900_000,
    appEnv: {},
  },
};
export const SUITE = process.env.CHAOS_SUITE ?? 'chaos';
if (SUITE !== 'chaos' && SUITE !== 'cluster') throw new Error(`CHAOS_SUITE: "${SUITE}" is not chaos or cluster`);
export const ACCESS = process.env.CLUSTER_ACCESS ?? 'haproxy';
if (ACCESS !== 'haproxy' && ACCESS !== 'urls') throw new Error(`CLUSTER_ACCESS: "${ACCESS}" is not haproxy or urls`);
// The cluster suite's full profile: the 15,000 mentions (4 per round) over the whole run,
// with two SIGKILLs of the critical queue's leader; its holds are a node down for 30 s.
if (SUITE === 'cluster') {
  PROFILES.full = { ...PROFILES.full, totalRounds: 3_750, kills: 2 };
  PROFILES.mid = { ...PROFILES.mid, kills: 2 };
  PROFILES.short = { ...PROFILES.short, kills: 1 };
}
export const PROFILE_NAME = process.env.CHAOS_PROFILE ?? 'short';
export const base = PROFILES[PROFILE_NAME];
if (!base) throw new Error(`CHAOS_PROFILE: "${PROFILE_NAME}" is not one of ${Object.keys(PROFILES).join(', ')}`);
export const P: Profile = {
  ...base,
  rounds: Number(process.env.CHAOS_ROUNDS ?? base.rounds),
  rate: Number(process.env.CHAOS_RATE ?? base.rate),
  holdMs: Number(process.env.CHAOS_HOLD_MS ?? base.holdMs),
  kills: Number(process.env.CHAOS_KILLS ?? base.kills),
};
export const JWT_SECRET = 'chaos-secret-chaos-secret-chaos-secret';
