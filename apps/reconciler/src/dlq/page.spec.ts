import { readFileSync, rmSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { ErrorBody } from '@community/service';
import { bundleAppTo, startBundleUntilConfig } from '@community/testing';
import type { Pool } from 'pg';
import type { DlqMetrics } from './metrics';
import { dlqRoutes } from './routes';

/**
 * The console page's HTTP answers (app.inject, no database: these routes read none). The page and
 * its assets carry a CSP without 'unsafe-inline' and with frame-ancestors 'none', the HTML holds no
 * inline script, style or handler, and every asset it references is served by the app itself.
 * (That a browser runs it under that policy: test/dlq-console.test.ts, headless Chromium.)
 */
let app: FastifyInstance;

beforeAll(async () => {
  app = Fastify();
  // The shared error body the routes' schemas refer to (libs/service registers it on every app).
  app.addSchema({ ...ErrorBody, $id: 'ErrorBody' });
  const unused = new Proxy(
    {},
    {
      get: () => {
        throw new Error('the console page reads no data');
      },
    },
  );
  await app.register(
    dlqRoutes({
      pool: unused as Pool,
      metrics: unused as DlqMetrics,
      adminOnly: async () => undefined,
      summary: () => Promise.reject(new Error('unused')),
      runReplay: () => undefined,
    }),
  );
  await app.ready();
});
afterAll(async () => app.close());

function directives(csp: string | undefined): Map<string, string[]> {
  return new Map(
    (csp ?? '')
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...values]) => [name, values]),
  );
}

it('GET /console: a policy without unsafe-inline, no framing, and no inline script or style in the page', async () => {
  const res = await app.inject({ url: '/console' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  const csp = directives(res.headers['content-security-policy'] as string);
  expect(res.headers['content-security-policy']).not.toContain('unsafe-inline');
  expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
  expect(csp.get('script-src')).toEqual(["'self'"]);
  expect(csp.get('style-src')).toEqual(["'self'"]);
  expect(csp.get('default-src')).toEqual(["'none'"]);
  expect(res.headers['x-frame-options']).toBe('DENY');

  const html = res.body;
  expect(html).toMatch(/<h1>DLQ console<\/h1>/);
  // Every <script> has a src and no body; no <style>, no style="", no on…="" handler.
  for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)) {
    expect(m[1]).toMatch(/\ssrc="\/console\//);
    expect(m[2]).toBe('');
  }
  expect(html).not.toMatch(/<style\b/i);
  expect(html).not.toMatch(/\sstyle\s*=/i);
  expect(html).not.toMatch(/\son[a-z]+\s*=/i);
});

it('serves every asset the page references, with its type and the same policy', async () => {
  const html = (await app.inject({ url: '/console' })).body;
  const refs = [...html.matchAll(/<(?:script|link)\b[^>]*\s(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  expect(refs.sort()).toEqual(['/console/console.css', '/console/console.js']);
  const types: Record<string, string> = {
    '/console/console.css': 'text/css; charset=utf-8',
    '/console/console.js': 'text/javascript; charset=utf-8',
  };
  for (const ref of refs) {
    const res = await app.inject({ url: ref });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe(types[ref]);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.body.length).toBeGreaterThan(100);
  }
  // The script is the console's (it wires the page's controls), the stylesheet its styles.
  expect((await app.inject({ url: '/console/console.js' })).body).toContain("$('login-form').onsubmit");
  expect((await app.inject({ url: '/console/console.css' })).body).toContain('label.inline');
  // The script parses (a broken template escape would only show in a browser otherwise).
  const js = (await app.inject({ url: '/console/console.js' })).body;
  expect(() => new Function(js)).not.toThrow();
});

describe('a bundle of the reconciler', () => {
  // The page's files are read from disk at load (page.ts): a bundle that lacks one would only show
  // when the reconciler starts. Built the way every bundle is (scripts/dev/setup/bundle.mjs: npm
  // start, npm test, the images), inside the repository, where node_modules resolves.
  const ROOT = path.resolve(__dirname, '../../../..');
  const dir = path.join(ROOT, 'dist', 'test-bundles', `console-${process.pid}`);
  const ASSETS = ['dlq-console.html', 'dlq-console.css', 'dlq-console.browser.js'];
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('carries the page, its stylesheet and its script, and stops at start without one', async () => {
    const main = path.join(dir, 'main.js');
    await bundleAppTo('reconciler', main);
    for (const file of ASSETS)
      expect(readFileSync(path.join(dir, file), 'utf8')).toBe(readFileSync(path.join(__dirname, file), 'utf8'));

    const stderr = await startBundleUntilConfig(main);
    expect(stderr).toContain('PORT');
    expect(stderr).not.toContain('ENOENT');

    unlinkSync(path.join(dir, ASSETS[2]));
    expect(await startBundleUntilConfig(main)).toContain(
      `ENOENT: no such file or directory, open '${path.join(dir, ASSETS[2])}'`,
    );
  }, 90_000);
});
