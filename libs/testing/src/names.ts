import { randomBytes } from 'node:crypto';

/**
 * The name of a resource a test creates on a shared server (a vhost, a database, a Redis prefix):
 * `test<sep><prefix><sep><pid><sep><8 hex>`. The pid is the creating process's (the jest worker's).
 * A run killed before its `afterAll` leaks these; `npm test`'s setup deletes every `test*` name whose
 * process is gone and keeps those of a process still alive (another run on this machine), so it must
 * be able to read the owner back (scripts/dev/setup/leftovers.mjs, docs/TESTING.md "Leftovers").
 */
export function testResourceName(prefix: string, sep: Separator = '-'): string {
  return ['test', prefix, ownedSuffix(sep)].join(sep);
}

type Separator = '-' | '_' | ':';

/** `<pid><sep><8 hex>`: the unique, owner-bearing end of every test resource name. */
export function ownedSuffix(sep: Separator): string {
  return `${process.pid}${sep}${randomBytes(4).toString('hex')}`;
}

/** A Redis key prefix of a test's own: `test:<name>:<pid>:<8 hex>:` (see testResourceName). */
export function testRedisPrefix(name: string): string {
  return `${testResourceName(name, ':')}:`;
}
