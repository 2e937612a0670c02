import { createECDH, randomBytes } from 'node:crypto';
import { parseEndpoint, parseSubscription } from './subscription';

const strict = { allowInsecureLocalhost: false };
const local = { allowInsecureLocalhost: true };
const keys = () => ({
  p256dh: createECDH('prime256v1').generateKeys().toString('base64url'),
  auth: randomBytes(16).toString('base64url'),
});

it('accepts a browser PushSubscription (toJSON, with expirationTime null)', () => {
  const k = keys();
  expect(
    parseSubscription({ endpoint: 'https://fcm.googleapis.com/fcm/send/abc', expirationTime: null, keys: k }, strict),
  ).toEqual({ ok: true, value: { endpoint: 'https://fcm.googleapis.com/fcm/send/abc', ...k } });
});

it.each([
  ['not an object', 'x', /body must be a JSON object/],
  ['an unknown field', { endpoint: 'https://a', keys: keys(), extra: 1 }, /unknown field 'extra'/],
  ['no endpoint', { keys: keys() }, /'endpoint' must be a non-empty string/],
  ['an http endpoint', { endpoint: 'http://push.example/x', keys: keys() }, /'endpoint' must be an https URL/],
  ['credentials in the endpoint', { endpoint: 'https://u:p@push.example/x', keys: keys() }, /credentials/],
  // NUL reached PostgreSQL (a 500); the others would be stored as no browser sends them.
  ...[
    'https://push.example/a\u0000b',
    'https://push.example/a\nb',
    ' https://push.example/x',
    'https://push.example/\ud800',
  ].map((endpoint): [string, unknown, RegExp] => [
    `the endpoint ${JSON.stringify(endpoint)}`,
    { endpoint, keys: keys() },
    /printable ASCII/,
  ]),
  ['no keys', { endpoint: 'https://a' }, /'keys' must be an object/],
  ['a short p256dh', { endpoint: 'https://a', keys: { ...keys(), p256dh: 'AAAA' } }, /'keys.p256dh' must be/],
  ['a non-base64url auth', { endpoint: 'https://a', keys: { ...keys(), auth: 'a+b/' } }, /'keys.auth' must be/],
  [
    'a 15-byte auth',
    { endpoint: 'https://a', keys: { ...keys(), auth: randomBytes(15).toString('base64url') } },
    /16 bytes/,
  ],
])('refuses %s, saying why', (_what, body, reason) => {
  expect(parseSubscription(body, strict)).toEqual({ ok: false, message: expect.stringMatching(reason) });
});

it('allows http only on a loopback host, and only when configured', () => {
  expect(parseEndpoint('http://127.0.0.1:9/p', local)).toEqual({ ok: true, value: 'http://127.0.0.1:9/p' });
  expect(parseEndpoint('http://localhost/p', local)).toMatchObject({ ok: true });
  expect(parseEndpoint('http://[::1]:8/p', local)).toMatchObject({ ok: true });
  expect(parseEndpoint('http://push.example/p', local)).toMatchObject({ ok: false });
  expect(parseEndpoint('http://127.0.0.1:9/p', strict)).toMatchObject({ ok: false });
});
