// The Lua scripts are read from disk (index.ts): a .lua file the service does not register, a
// registered one that is not there, one Redis cannot compile, or a bundle that lacks one would only
// show at start or at the first call that needs it. Checked here from the sources and from a bundle
// built the way every bundle is (scripts/dev/setup/bundle.mjs: npm start, npm test, the images).
import { readdirSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import Redis from 'ioredis';
import { bundleAppTo, startBundleUntilConfig } from '@community/testing';
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

  it('carries every script and loads them', async () => {
    const main = path.join(dir, 'main.js');
    await bundleAppTo('feed-service', main);
    expect(luaFiles(dir)).toEqual(registered);
    for (const file of registered)
      expect(readFileSync(path.join(dir, file), 'utf8')).toBe(readFileSync(path.join(__dirname, file), 'utf8'));

    const stderr = await startBundleUntilConfig(main);
    expect(stderr).toContain('PORT');
    expect(stderr).not.toContain('ENOENT');

    unlinkSync(path.join(dir, registered[0]));
    expect(await startBundleUntilConfig(main)).toContain(
      `ENOENT: no such file or directory, open '${path.join(dir, registered[0])}'`,
    );
  });
});
