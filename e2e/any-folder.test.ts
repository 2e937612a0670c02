import { execFile } from 'node:child_process';
import { cp, mkdtemp, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * The suite runs from any folder. A clone in a `mktemp -d` folder or in root's home is mode 0700: the
 * users the suite switches to (rabbitmq, postgres) cannot read it, and a CLI started there as them
 * failed (rabbitmqctl printed `File operation error: eacces. Target: .` instead of the queue list;
 * every depth the fault suite read was NaN). This copies the repository's files into such a folder
 * and runs, from there, everything the suite does as another user (e2e/any-folder/probe.ts).
 */
const ROOT = path.resolve(__dirname, '..');
const run = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'any-folder-')); // mode 0700
  const clone = path.join(dir, 'repo');
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  const files = stdout.split('\0').filter((f) => f && !f.startsWith('node_modules/'));
  // The working tree's files, as a clone of it would have them (uncommitted changes included).
  for (const f of files)
    await cp(path.join(ROOT, f), path.join(clone, f)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err; // listed but deleted in the working tree
    });
  await symlink(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'));
}, 120_000);

afterAll(() => rm(dir, { recursive: true, force: true }));

it('starts the private servers and reads exact queue depths as other users from a 0700 folder', async () => {
  expect((await stat(dir)).mode & 0o077).toBe(0); // nobody but its owner may read it
  const clone = path.join(dir, 'repo');
  const { stdout } = await run(process.execPath, ['-r', '@swc-node/register', 'e2e/any-folder/probe.ts'], {
    cwd: clone,
    env: process.env,
    timeout: 240_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const result = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
  expect(result).toEqual({
    cwd: clone,
    privateQueues: { 'probe.private': 3 },
    postgres: 1,
    sharedQueues: { 'probe.shared': 2 },
  });
}, 300_000);
