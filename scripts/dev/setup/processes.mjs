// Runs long-lived child processes (MailDev, the apps) with name-prefixed output, and stops them
// together: SIGTERM to each, up to 15 s to drain, then SIGKILL. Each child gets its own process
// group, so a Ctrl-C in the terminal reaches only this supervisor, which then shuts the children
// down in order instead of every process receiving the signal at once.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { c, log } from './log.mjs';

const PALETTE = [c.cyan, c.magenta, c.blue, c.yellow, c.green];

export class Supervisor {
  constructor({ graceMs = 15_000 } = {}) {
    this.graceMs = graceMs;
    this.children = new Map(); // name -> { child, exited: Promise, alive }
    this.stopping = false;
    this.width = 8;
    this.onAllExited = null;
    // Last resort if this process dies without stopAll(): do not leave the groups behind.
    process.once('exit', () => {
      for (const entry of this.children.values()) if (entry.alive) signalGroup(entry.child, 'SIGTERM');
    });
  }

  /** Starts a child; its stdout/stderr lines are printed as "name │ line". */
  spawn(name, command, args, { cwd, env } = {}) {
    this.width = Math.max(this.width, name.length);
    const colour = PALETTE[this.children.size % PALETTE.length];
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const entry = { name, child, alive: true };
    const prefix = () => colour(`${name.padEnd(this.width)} │`);
    for (const [stream, out] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => out.write(`${prefix()} ${line}\n`));
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
          log.error(`${c.bold(name)} exited unexpectedly (${how}); the others keep running. Its last lines are above; restart with npm start.`);
          if (![...this.children.values()].some((e) => e.alive)) this.onAllExited?.();
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

  /** SIGTERM every live child, wait up to graceMs, then SIGKILL the stragglers. */
  async stopAll() {
    this.stopping = true;
    const live = [...this.children.values()].filter((e) => e.alive);
    if (!live.length) return;
    log.step(`stopping ${live.map((e) => e.name).join(', ')} (SIGTERM; SIGKILL after ${this.graceMs / 1000} s)`);
    for (const e of live) signalGroup(e.child, 'SIGTERM');
    let timer;
    const timeout = new Promise((resolve) => (timer = setTimeout(resolve, this.graceMs, 'timeout')));
    const result = await Promise.race([Promise.all(live.map((e) => e.exited)), timeout]);
    clearTimeout(timer);
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
    for (const e of this.children.values()) signalGroup(e.child, 'SIGKILL');
  }
}

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
