/**
 * The feed's Lua scripts, one `.lua` file each beside this module (its header says what it does,
 * its KEYS and ARGV), defined on every connection as ioredis custom commands: EVALSHA, with EVAL
 * once per connection when Redis does not know the script (after a restart or SCRIPT FLUSH).
 *
 * Read from disk, at `__dirname`, when this module loads (docs/FEED.md "Lua scripts"): from the
 * sources that is this folder, so jest, `node -r @swc-node/register` and any other way of running
 * the TypeScript need no loader, transform or require hook; in an esbuild bundle `__dirname` is the
 * bundle's folder, and scripts/dev/setup/bundle.mjs copies the `.lua` files beside every bundled
 * module there (so the reconciler's bundle, which includes this cache, gets them too, and the
 * Docker images copy the folder whole). Reading at load time makes a missing file fail the process
 * at start, not at the first fan-out.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type Redis from 'ioredis';

/** Command name → its file and number of keys (none: the first argument of each call says). */
export const COMMANDS = {
  feedPush: { file: 'feed-push.lua', keys: 2 },
  feedPushMany: { file: 'feed-push-many.lua', keys: undefined },
  readyPage: { file: 'feed-ready-page.lua', keys: 2 },
  leaseRelease: { file: 'lease-release.lua', keys: 1 },
  leaseExtend: { file: 'lease-extend.lua', keys: 1 },
  laneEnter: { file: 'lane-enter.lua', keys: 1 },
  laneBusy: { file: 'lane-busy.lua', keys: 1 },
} as const;

/** Where the `.lua` files are read from (the sources' folder, or the bundle's). */
export const SCRIPTS_DIR = __dirname;

const SOURCES = Object.fromEntries(
  Object.entries(COMMANDS).map(([name, c]) => [name, readFileSync(path.join(SCRIPTS_DIR, c.file), 'utf8')]),
) as Record<keyof typeof COMMANDS, string>;

export interface FeedCommands {
  feedPush(feed: string, live: string, cap: number, ...scoreMembers: Array<string | number>): Promise<number>;
  feedPushMany(numberOfKeys: number, ...keysThenArgs: Array<string | number>): Promise<number>;
  readyPage(
    ready: string,
    feed: string,
    max: string | number,
    count: number,
    bodyPrefix: string,
  ): Promise<[string[], string[], number] | null>;
  leaseRelease(key: string, holder: string): Promise<number>;
  leaseExtend(key: string, holder: string, ms: number): Promise<number>;
  laneEnter(key: string, holder: string, ttlMs: number): Promise<number>;
  laneBusy(key: string): Promise<number>;
}
export type FeedRedis = Redis & FeedCommands;

/** Defines every script on `client` (no round trip: ioredis sends a script with its first call). */
export function defineFeedCommands(client: Redis): FeedRedis {
  for (const [name, c] of Object.entries(COMMANDS) as Array<
    [keyof typeof COMMANDS, (typeof COMMANDS)[keyof typeof COMMANDS]]
  >) {
    client.defineCommand(
      name,
      c.keys === undefined ? { lua: SOURCES[name] } : { numberOfKeys: c.keys, lua: SOURCES[name] },
    );
  }
  return client as FeedRedis;
}
