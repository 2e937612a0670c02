import { keysetCodec } from './keyset-cursor';

const codec = keysetCodec<{ n: number; id: string }>({
  parts: (k) => [k.n, k.id],
  key: (n, id) => ({ n, id }),
  validId: (id) => /^[a-z]+$/.test(id),
});
const text = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

it('round-trips a key through an opaque base64url text', () => {
  const encoded = codec.encode({ n: 42, id: 'abc' });
  expect(encoded).toMatch(/^[A-Za-z0-9_-]+$/);
  expect(codec.decode(encoded)).toEqual({ n: 42, id: 'abc' });
});

it.each([
  ['not base64 JSON', 'not-a-cursor!'],
  ['an object', text({ n: 1, id: 'a' })],
  ['three parts', text([1, 'a', 2])],
  ['a negative number', text([-1, 'a'])],
  ['a fraction', text([1.5, 'a'])],
  ['an unsafe integer', text([2 ** 60, 'a'])],
  ['a numeric id', text([1, 2])],
  ['an id the service does not issue', text([1, 'A-B'])],
])('refuses %s', (_name, cursor) => {
  expect(codec.decode(cursor)).toBeUndefined();
});
