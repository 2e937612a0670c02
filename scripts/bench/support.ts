/**
 * What the notification benchmarks share (scripts/bench/notifications.ts, scripts/bench/peers.ts):
 * the event they publish, the confirm-windowed publisher, latency percentiles, CPU and process
 * readings from /proc, and the notification-service child process as `npm start` runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type amqplib from 'amqplib';
import { buildEvent } from '@community/contracts';
import { brokerUserOf } from '@community/messaging';

/** The user every connection of the benchmarks is (test vhosts keep AMQP_URL's): the user-id their raw publishes carry. */
export const PUBLISHER_USER = brokerUserOf(process.env.AMQP_URL || 'amqp://guest:guest@127.0.0.1:5672');
export const ROOT = path.resolve(__dirname, '../..');

/** A user.mentioned of `user`, as the community API would publish it (80-character excerpt). */
export function mentionBody(i: number, user: string, run: string): Buffer {
  const e = buildEvent(
    'user.mentioned',
    {
      commentId: `c-${run}-${i}`,
      postId: 'post-42',
      actorId: 'actor-1',
      mentionedUserId: user,
      excerpt: 'x'.repeat(80),
    },
    { producer: 'bench' },
  );
  return Buffer.from(JSON.stringify(e));
}

/** A persistent JSON message; messageId = the index (consumers dead-letter a message without one). */
export function publishOptions(routingKey: string, i: number): amqplib.Options.Publish {
  return {
    persistent: true,
    contentType: 'application/json',
    type: routingKey,
    messageId: String(i),
    userId: PUBLISHER_USER,
  };
}

/** Publishes every body to `exchange` with confirms, at most `window` unconfirmed at a time. */
export async function publishAll(
  ch: amqplib.ConfirmChannel,
  exchange: string,
  routingKey: string,
  bodies: Buffer[],
  window: number,
): Promise<void> {
  let outstanding = 0;
  let wake: (() => void) | undefined;
  let failed: Error | undefined;
  for (const [i, body] of bodies.entries()) {
    while (outstanding >= window) await new Promise<void>((r) => (wake = r));
    if (failed) throw failed;
    outstanding++;
    const ok = ch.publish(exchange, routingKey, body, publishOptions(routingKey, i), (err) => {
      if (err) failed = err;
      outstanding--;
      wake?.();
    });
    if (!ok) await new Promise((r) => ch.once('drain', r));
  }
  await ch.waitForConfirms();
  if (failed) throw failed;
}

export function percentiles(sentAt: Float64Array, seenAt: Float64Array): { p50: number; p99: number; max: number } {
  const lat = Array.from(sentAt, (s, i) => seenAt[i] - s).sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
  return { p50: q(0.5), p99: q(0.99), max: lat[lat.length - 1] };
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return 0; // the process is gone
  }
}

/** Busy and total jiffies of the whole machine, from /proc/stat. */
export function machineCpu(): { busy: number; total: number } {
  const cols = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = cols[3] + cols[4];
  const total = cols.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/** Pids whose command name is `comm` (e.g. every postgres backend). */
export function pidsOf(comm: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/comm`, 'utf8').trim() === comm;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * notification-service as a child process, ready (/readyz 200) on env.PORT: the esbuild bundle
 * `npm start` runs (scripts/dev/setup/bundle.mjs; plain node), or with `runner: 'swc'` compiled on
 * the fly as the tests run it. `nodeArgs`: extra node flags (e.g. `--cpu-prof`).
 */
export async function startNotificationServiceProcess(
  env: Record<string, string>,
  runner: 'bundle' | 'swc',
  nodeArgs: string[] = [],
): Promise<ChildProcess> {
  const { bundleApp } = (await import(path.join(ROOT, 'scripts/dev/setup/bundle.mjs'))) as {
    bundleApp: (name: string) => Promise<string>;
  };
  const args = [
    ...nodeArgs,
    ...(runner === 'swc'
      ? ['-r', '@swc-node/register', 'apps/notification-service/src/main.ts']
      : [await bundleApp('notification-service')]),
  ];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`notification-service exited with ${child.exitCode} during start`);
    try {
      if ((await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status === 200) return child;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('notification-service not ready within 60 s');
    await new Promise((r) => setTimeout(r, 200));
  }
}
