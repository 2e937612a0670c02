import { setTimeout as sleep } from 'node:timers/promises';

export type ReadinessChecks = Record<string, boolean>;
export type ReadinessProbe = () => Promise<ReadinessChecks> | ReadinessChecks;

export interface ReadinessState {
  /** Record a named dependency's state (e.g. set('amqp', true) on connect, false on close). */
  set(name: string, ok: boolean): void;
  /** Irreversible: from now on the service reports not ready, whatever the other checks say. */
  markShuttingDown(): void;
  readonly shuttingDown: boolean;
  /** A snapshot of all checks; pass it as `readiness` to buildServer. */
  checks: () => ReadinessChecks;
  isReady(): boolean;
}

/** The pseudo-check that turns false on shutdown, visible in /readyz bodies. */
const ACCEPTING_CHECK = 'accepting';

/**
 * Readiness as state that the parts push into (connection events, consumer start), rather than
 * probes that ping dependencies on every /readyz: a probe then answers instantly and never hangs
 * on a slow database. Starts with `accepting: true`; add checks before traffic should arrive.
 *
 * On SIGTERM, readiness must go false before anything stops, so the load balancer stops routing
 * to this replica while in-flight work drains.
 */
export function readinessState(initial: ReadinessChecks = {}): ReadinessState {
  const state = new Map<string, boolean>(Object.entries(initial));
  state.set(ACCEPTING_CHECK, true);
  let shuttingDown = false;

  const checks = (): ReadinessChecks => Object.fromEntries(state);
  return {
    set(name, ok) {
      // Keeps a late "connected" event from re-opening a replica that is shutting down.
      if (name === ACCEPTING_CHECK && shuttingDown) return;
      state.set(name, ok);
    },
    markShuttingDown() {
      shuttingDown = true;
      state.set(ACCEPTING_CHECK, false);
    },
    get shuttingDown() {
      return shuttingDown;
    },
    checks,
    isReady: () => [...state.values()].every(Boolean),
  };
}

/** A dependency check for /readyz: true when `check` resolves, false when it throws or rejects. */
export async function answers(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await check();
    return true;
  } catch {
    return false;
  }
}

/** Below the /readyz timeout (2 s), so a database that hangs is reported by name, not as a timeout. */
const DATABASE_CHECK_MS = 1_000;

/**
 * The `database` check of every app's /readyz: Postgres answers `SELECT 1` within a second. Asked on
 * every probe: nothing else notices that the database went away until a request or a message needs
 * it, and /readyz must name the dependency that is down.
 */
export function databaseAnswers(pool: { query(sql: string): Promise<unknown> }): Promise<boolean> {
  return answers(() =>
    Promise.race([
      pool.query('SELECT 1'),
      sleep(DATABASE_CHECK_MS, undefined, { ref: false }).then(() => Promise.reject(new Error('no answer in time'))),
    ]),
  );
}

/**
 * /readyz details for a broker that blocks publishes (AMQP connection.blocked, e.g. a memory alarm):
 * `{ broker: { publishes: 'blocked', reason } }` while it lasts, `{ broker: { publishes: 'flowing' } }`
 * otherwise. Details, not a check: the alarm is broker-wide, so every replica would go unready at once.
 */
export function brokerDetails(blockedReason: string | undefined): {
  broker: { publishes: 'blocked' | 'flowing'; reason?: string };
} {
  return {
    broker: blockedReason === undefined ? { publishes: 'flowing' } : { publishes: 'blocked', reason: blockedReason },
  };
}
