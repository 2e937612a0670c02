// Runs long-lived child processes (MailDev, the apps) with name-prefixed output, and stops them
// together: SIGTERM to each, up to 15 s to drain, then SIGKILL. Each child gets its own process
// group, so a Ctrl-C in the terminal reaches only this supervisor, which then shuts the children
// down in order instead of every process receiving the signal at once.
//
// A child started with `restart: true` is restarted when it exits unexpectedly, the way a Kubernetes
// Deployment restarts a crashed pod: after an exponential backoff (1 s, 2 s, 4 s … capped at 60 s;
// Kubernetes uses 10 s … 5 min, which is too slow to be useful on a laptop), reset once the child
// has stayed up for `stableMs`. Each restart is logged and counted (`restarts(name)`), so the local
// stack heals itself and still shows that something went wrong.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { c, log } from './log.mjs';
import { projectRules } from './project-rules.mjs';

const PALETTE = [c.cyan, c.magenta, c.blue, c.yellow, c.green];

export class Supervisor {
  constructor({ graceMs = 15_000, backoffBaseMs = 1_000, backoffMaxMs = 60_000, stableMs = 60_000 } = {}) {
    this.graceMs = graceMs;
    this.backoff = { baseMs: backoffBaseMs, maxMs: backoffMaxMs, stableMs };
    this.onRestart = null; // (name, restarts) => void, after a restarted child has been spawned
    this.children = new Map(); // name -> { child, exited: Promise, alive }
    this.stopping = false;
    this.width = 8;
    this.onAllExited = null;
    // Last resort if this process dies without stopAll(): do not leave the groups behind.
    process.once('exit', () => {
      for (const entry of this.children.values()) if (entry.alive) signalGroup(entry.child, 'SIGTERM');
    });
  }

  /**
   * Starts a child; its stdout/stderr lines are printed as "name │ line" (`format` rewrites each line
   * first, e.g. a JSON log line into a readable one). With `restart: true` an unexpected exit
   * schedules a restart with backoff instead of leaving the child dead. `quiet`: its stdout is not
   * shown (chatter with a UI of its own to look at), its stderr still is (why it failed).
   */
  spawn(name, command, args, { cwd, env, restart = false, format = (line) => line, quiet = false } = {}) {
    this.width = Math.max(this.width, name.length);
    const previous = this.children.get(name);
    const colour = previous?.colour ?? PALETTE[this.children.size % PALETTE.length];
    const child = spawn(command, args, {
      cwd,
      env,
      stdio: ['ignore', quiet ? 'ignore' : 'pipe', 'pipe'],
      detached: true,
    });
    const entry = {
      name,
      child,
      colour,
      alive: true,
      startedAt: Date.now(),
      spec: { command, args, cwd, env, restart, format, quiet },
      restarts: previous?.restarts ?? 0,
      crashes: previous?.crashes ?? 0, // consecutive quick exits: drives the backoff
      timer: null,
    };
    const prefix = () => colour(`${name.padEnd(this.width)} │`);
    for (const [stream, out] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      if (stream)
        createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) =>
          out.write(`${prefix()} ${format(line)}\n`),
        );
    }
    entry.exited = new Promise((resolve) => {
      child.once('error', (err) => {
        log.error(`${name}: could not start ${command}: ${err.message}`);
        entry.alive = false;
        resolve({ code: null, signal: null });
      });
      child.once('exit', (code, signal) => {
        entry.alive = false;
        if (!this.stopping) {
          const how = signal ? `signal ${signal}` : `code ${code}`;
          if (entry.spec.restart) this.scheduleRestart(entry, how);
          else {
            log.error(
              `${c.bold(name)} exited unexpectedly (${how}); the others keep running. Its last lines are above; restart with npm start.`,
            );
            if (![...this.children.values()].some((e) => e.alive)) this.onAllExited?.();
          }
        }
        resolve({ code, signal });
      });
    });
    this.children.set(name, entry);
    return entry;
  }

  alive(name) {
    return this.children.get(name)?.alive ?? false;
  }

  /** How many times `name` has been restarted after an unexpected exit. */
  restarts(name) {
    return this.children.get(name)?.restarts ?? 0;
  }

  /** The delay before the next restart: base · 2^(quick exits in a row), capped. */
  restartDelay(entry) {
    // The project's one backoff rule (backoffDelay, @community/messaging). No jitter: there is one
    // supervisor per laptop, and the logged delays read 1 s, 2 s, 4 s.
    const { baseMs, maxMs } = this.backoff;
    return projectRules().backoffDelay(entry.crashes, { baseMs, maxMs, jitter: 'none' });
  }

  scheduleRestart(entry, how) {
    // A child that ran for a while before exiting starts a new backoff series, as kubelet does.
    if (Date.now() - entry.startedAt >= this.backoff.stableMs) entry.crashes = 0;
    const delay = this.restartDelay(entry);
    entry.crashes += 1;
    log.error(
      `${c.bold(entry.name)} exited unexpectedly (${how}); its last lines are above. Restarting in ${formatMs(delay)} (restart #${entry.restarts + 1}).`,
    );
    entry.timer = setTimeout(() => {
      entry.timer = null;
      if (this.stopping) return;
      const { command, args, ...options } = entry.spec;
      const next = this.spawn(entry.name, command, args, options);
      next.restarts = entry.restarts + 1;
      next.crashes = entry.crashes;
      log.warn(`${c.bold(entry.name)} restarted (${next.restarts} restart${next.restarts === 1 ? '' : 's'} so far)`);
      this.onRestart?.(entry.name, next.restarts);
    }, delay);
  }

  /** SIGTERM every live child, wait up to graceMs, then SIGKILL the stragglers. */
  async stopAll() {
    this.stopping = true;
    for (const e of this.children.values()) if (e.timer) clearTimeout(e.timer);
    const live = [...this.children.values()].filter((e) => e.alive);
    if (!live.length) return;
    log.step(`stopping ${live.map((e) => e.name).join(', ')} (SIGTERM; SIGKILL after ${this.graceMs / 1000} s)`);
    for (const e of live) signalGroup(e.child, 'SIGTERM');
    const graceOver = new AbortController();
    const timeout = sleep(this.graceMs, 'timeout', { signal: graceOver.signal });
    const result = await Promise.race([Promise.all(live.map((e) => e.exited)), timeout]);
    graceOver.abort(); // its AbortError rejects `timeout`, which the race has already handled
    if (result === 'timeout') {
      const stuck = live.filter((e) => e.alive);
      log.warn(`${stuck.map((e) => e.name).join(', ')} did not stop within ${this.graceMs / 1000} s: SIGKILL`);
      for (const e of stuck) signalGroup(e.child, 'SIGKILL');
      await Promise.all(stuck.map((e) => e.exited));
    }
    // Any grandchildren a child left in its group.
    for (const e of live) signalGroup(e.child, 'SIGKILL');
    log.ok('all processes stopped');
  }

  killAllNow() {
    this.stopping = true;
    for (const e of this.children.values()) if (e.timer) clearTimeout(e.timer);
    for (const e of this.children.values()) signalGroup(e.child, 'SIGKILL');
  }
}

const formatMs = (ms) => (ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`);

function signalGroup(child, signal) {
  if (!child.pid) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* already gone */
    }
  }
}

/**
 * Calls onShutdown once on SIGINT/SIGTERM/SIGHUP. npm forwards the terminal's Ctrl-C too, so a
 * repeat within 2 s is ignored; a later one forces onForce (e.g. SIGKILL everything).
 */
export function onShutdownSignals(onShutdown, onForce) {
  let first = 0;
  const handler = (signal) => {
    const now = Date.now();
    if (!first) {
      first = now;
      log.info(`${signal} received`);
      onShutdown(signal);
    } else if (now - first > 2000) {
      log.warn(`${signal} again: killing everything now`);
      onForce(signal);
    }
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, handler);
}
