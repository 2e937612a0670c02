import Fastify from 'fastify';
import { refuseUnstorableText, unstorableTextAt } from './text-guard';

describe('unstorableTextAt', () => {
  it.each([
    ['a\u0000b', 'x'],
    ['tail\ud800', 'x'],
    ['\udc00head', 'x'],
  ])('finds %j', (text, path) => {
    expect(unstorableTextAt(text, path)).toBe(path);
    expect(unstorableTextAt({ a: { b: [1, text] } }, 'body')).toBe('body/a/b/1');
  });

  it('accepts ordinary text, emoji (surrogate pairs) and non-strings', () => {
    expect(unstorableTextAt({ t: 'héllo 😀 مرحبا', n: 1, z: null, l: ['x'] }, 'body')).toBeUndefined();
  });
});

describe('refuseUnstorableText', () => {
  const app = Fastify();
  refuseUnstorableText(app);
  app.post('/p/:id', async () => ({ ok: true }));

  it.each([
    ['a param', '/p/a%00b', {}, 'params/id'],
    ['the query', '/p/x?q=a%00', {}, 'querystring/q'],
    ['a body string', '/p/x', { title: 'x\u0000' }, 'body/title'],
    ['a body key', '/p/x', { 'k\ud800': 1 }, undefined],
  ])('answers 400 for NUL or an unpaired surrogate in %s', async (_l, url, payload, at) => {
    const res = await app.inject({ method: 'POST', url, payload });
    expect(res.statusCode).toBe(400);
    if (at) expect(res.json().message).toBe(`${at} must not contain NUL characters or unpaired surrogates`);
  });

  it('answers 400 for a NUL nested deeper than the stack could recurse', async () => {
    const depth = 30_000;
    const res = await app.inject({
      method: 'POST',
      url: '/p/x',
      headers: { 'content-type': 'application/json' },
      payload: `{"a":${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}}`,
    });
    expect(res.statusCode).toBe(400);
  });

  it('lets clean requests through', async () => {
    const res = await app.inject({ method: 'POST', url: '/p/ok?q=1', payload: { title: 'fine 😀' } });
    expect(res.statusCode).toBe(200);
  });
});
