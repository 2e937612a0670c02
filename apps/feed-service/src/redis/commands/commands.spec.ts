// The Lua scripts are read from disk (index.ts): a .lua file the service does not register, a
// registered one that is not there, one Redis cannot compile, or a bundle that lacks one would only
// show at start or at the first call that needs it. Checked here from the sources and from a bundle
// built the way every bundle is (scripts/dev/setup/bundle.mjs: npm start, npm test, the images).
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import { loadFeedConfig } from '../../config';
import { COMMANDS, SCRIPTS_DIR } from '.';

const ROOT = path.resolve(__dirname, '../../../../..');
const luaFiles = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.lua'))
    .sort();
const registered = Object.values(COMMANDS)
  .map((c) => c.file)
  .sort();

it('registers every .lua file beside it, and no other', () => {
  expect(SCRIPTS_DIR).toBe(__dirname);
  expect(registered).toEqual(luaFiles(__dirname));
});

it('each script compiles on Redis', async () => {
  const redis = new Redis(loadFeedConfig().REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    for (const file of registered)
      await expect(redis.script('LOAD', readFileSync(path.join(__dirname, file), 'utf8'))).resolves.toMatch(
        /^[0-9a-f]{40}$/,
      );
  } finally {
    redis.disconnect();
  }
});

describe('a bundle of feed-service', () => {
  // Inside the repository, where node_modules resolves for the bundle's npm packages.
  const dir = path.join(ROOT, 'dist', 'test-bundles', `lua-${process.pid}`);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Loading a bundle runs every module's top level, index.ts's reads included, before the
  // configuration is loaded: an invalid PORT stops it right after, with nothing connected.
  const start = (main: string) =>
    promisify(execFile)(process.execPath, [main], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, PORT: 'not-a-port' },
      timeout: 30_000,
    }).then(
      () => '',
      (err: { stderr: string }) => err.stderr,
    );

  it('carries every script and loads them', async () => {
    // In a child: jest's module system cannot import the ES module bundle.mjs.
    const main = path.join(dir, 'main.js');
    const build = `import { bundleApp } from './scripts/dev/setup/bundle.mjs'; await bundleApp('feed-service', process.cwd(), ${JSON.stringify(main)});`;
    await promisify(execFile)(process.execPath, ['--input-type=module', '-e', build], { cwd: ROOT, timeout: 60_000 });
    expect(luaFiles(dir)).toEqual(registered);
    for (const file of registered)
      expect(readFileSync(path.join(dir, file), 'utf8')).toBe(readFileSync(path.join(__dirname, file), 'utf8'));

    const stderr = await start(main);
    expect(stderr).toContain('PORT');
    expect(stderr).not.toContain('ENOENT');

    unlinkSync(path.join(dir, registered[0]));
    expect(await start(main)).toContain(`ENOENT: no such file or directory, open '${path.join(dir, registered[0])}'`);
  });
});
