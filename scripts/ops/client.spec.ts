import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { commonConfig, DEV_ADMIN_KEY_ID, DEV_ADMIN_OPERATOR, loadConfig } from '@community/config';
import { authSettingsFrom, tokenAuthenticator } from '@community/service';
import { clientConfig, operatorKeygen, UsageError } from './client';
import { main } from './ops';

const dir = mkdtempSync(path.join(tmpdir(), 'ops-keys-'));
const header = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()) as Record<string, unknown>;
const claims = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;
/** What the reconciler makes of a token, with this ADMIN_KEYS. */
const verified = (token: string, adminKeys?: string) =>
  tokenAuthenticator(
    authSettingsFrom('reconciler', loadConfig(commonConfig('reconciler'), adminKeys ? { ADMIN_KEYS: adminKeys } : {})),
  ).authenticate(token);

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t) } };
}

describe('clientConfig', () => {
  it('takes OPS_TOKEN as is', () => {
    expect(clientConfig({ OPS_TOKEN: 't', RECONCILER_URL: 'http://r:1/' })).toEqual({
      baseUrl: 'http://r:1',
      token: 't',
      subject: '(OPS_TOKEN)',
    });
  });

  it("signs with the operator's own key (OPS_ADMIN_KEY_FILE, OPS_ADMIN_KEY_ID): EdDSA, the kid, for the reconciler, no sub of its choosing", () => {
    const { privateKeyPem, entry } = operatorKeygen('alice@example.org', 'alice-1');
    const file = path.join(dir, 'alice.pem');
    writeFileSync(file, privateKeyPem);
    const c = clientConfig({
      OPS_ADMIN_KEY_FILE: file,
      OPS_ADMIN_KEY_ID: 'alice-1',
      OPS_USER: 'mallory',
      JWT_SECRET: 'x'.repeat(40),
    });
    expect(header(c.token)).toEqual({ alg: 'EdDSA', typ: 'JWT', kid: 'alice-1' });
    expect(claims(c.token)).toEqual({
      iss: 'community-ops',
      aud: 'reconciler',
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    expect(verified(c.token, `[${entry}]`)).toMatchObject({
      userId: 'alice@example.org',
      admin: true,
      operator: { name: 'alice@example.org', kid: 'alice-1' },
    });
    expect(c.subject).toBe('key alice-1');
  });

  it('outside production without a key: the development operator, whom the default ADMIN_KEYS trusts', () => {
    const c = clientConfig({});
    expect(header(c.token).kid).toBe(DEV_ADMIN_KEY_ID);
    expect(verified(c.token).userId).toBe(DEV_ADMIN_OPERATOR);
  });

  it('never mints from JWT_SECRET, and in production needs your own key or a token, naming the variables', () => {
    expect(() => clientConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40) })).toThrow(UsageError);
    expect(() => clientConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40) })).toThrow(
      /OPS_ADMIN_KEY_FILE and OPS_ADMIN_KEY_ID .* or OPS_TOKEN/,
    );
    expect(() => clientConfig({ OPS_ADMIN_KEY_FILE: '/x' })).toThrow(/both OPS_ADMIN_KEY_FILE .* and OPS_ADMIN_KEY_ID/);
    expect(() => clientConfig({ OPS_ADMIN_KEY_FILE: path.join(dir, 'missing.pem'), OPS_ADMIN_KEY_ID: 'k' })).toThrow(
      /OPS_ADMIN_KEY_FILE: cannot read/,
    );
    const notAKey = path.join(dir, 'not-a-key.pem');
    writeFileSync(notAKey, 'hello');
    expect(() => clientConfig({ OPS_ADMIN_KEY_FILE: notAKey, OPS_ADMIN_KEY_ID: 'k' })).toThrow(
      /OPS_ADMIN_KEY_FILE: .* not a PEM PKCS#8 private key/,
    );
  });
});

describe('ops keygen', () => {
  it('writes the private key (mode 600, never over an existing file) and prints the ADMIN_KEYS entry the services accept', async () => {
    const file = path.join(dir, 'bob.pem');
    const run = io();
    expect(
      await main(['keygen', '--operator', 'bob', '--kid', 'bob-2026-12', '--out', file, '--json'], run.io, {}),
    ).toBe(0);
    const printed = JSON.parse(run.out.join('\n')) as {
      kid: string;
      operator: string;
      keyFile: string;
      entry: { kid: string; operator: string; publicKey: string };
    };
    expect(printed).toMatchObject({
      kid: 'bob-2026-12',
      operator: 'bob',
      keyFile: file,
      entry: { kid: 'bob-2026-12', operator: 'bob' },
    });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // The entry goes into ADMIN_KEYS as is; the key file and kid sign tokens it verifies as bob.
    const adminKeys = JSON.stringify([printed.entry]);
    expect(loadConfig(commonConfig('reconciler'), { ADMIN_KEYS: adminKeys }).ADMIN_KEYS).toBe(adminKeys);
    const token = clientConfig({ OPS_ADMIN_KEY_FILE: file, OPS_ADMIN_KEY_ID: 'bob-2026-12' }).token;
    expect(verified(token, adminKeys).userId).toBe('bob');

    const again = io();
    expect(await main(['keygen', '--operator', 'bob', '--out', file], again.io, {})).toBe(2);
    expect(again.err.join('\n')).toMatch(/cannot write .* \(EEXIST\)/);
    expect(readFileSync(file, 'utf8')).toMatch(/BEGIN PRIVATE KEY/);
  });

  it('refuses a kid or name the services would refuse, and needs --operator and --out', async () => {
    const bad = io();
    expect(
      await main(['keygen', '--operator', 'bob', '--kid', 'has space', '--out', path.join(dir, 'x.pem')], bad.io, {}),
    ).toBe(2);
    expect(bad.err.join('\n')).toMatch(/^keygen: kid must be/);
    const missing = io();
    expect(await main(['keygen', '--operator', 'bob'], missing.io, {})).toBe(2);
    expect(missing.err.join('\n')).toMatch(/keygen --operator <name> --out <file>/);
  });
});

describe('ops token', () => {
  it('prints an admin token for the reconciler, or for --audience', async () => {
    const run = io();
    expect(await main(['token', '--audience', 'feed-service'], run.io, {})).toBe(0);
    expect(claims(run.out[0])).toMatchObject({ aud: 'feed-service', iss: 'community-ops' });
    const plain = io();
    expect(await main(['token'], plain.io, {})).toBe(0);
    expect(claims(plain.out[0])).toMatchObject({ aud: 'reconciler' });
  });
});
