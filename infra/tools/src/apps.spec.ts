// Every app runs as its own least-privilege broker user under npm start, compose and Kubernetes
// (AMQP_TOPOLOGY=own-queues). An app that builds its messaging runtime without passing the
// provisioning mode declares the whole topology and is refused (ACCESS_REFUSED) at its first
// exchange declare: caught here, before a deploy does.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'generated' ? [] : sources(full);
    return /\.ts$/.test(e.name) && !/\.(spec|test)\.ts$/.test(e.name) ? [full] : [];
  });
}

/** `createMessaging({ ... })` calls, with their argument text (up to the matching parenthesis). */
export function messagingCalls(code: string): string[] {
  const calls: string[] = [];
  for (const m of code.matchAll(/createMessaging\(/g)) {
    let depth = 0;
    for (let i = m.index! + 'createMessaging'.length; i < code.length; i++) {
      if (code[i] === '(') depth++;
      if (code[i] === ')' && --depth === 0) {
        calls.push(code.slice(m.index!, i + 1));
        break;
      }
    }
  }
  return calls.filter((c) => !c.startsWith('createMessaging()'));
}

const apps = readdirSync(path.join(ROOT, 'apps')).filter((a) =>
  readdirSync(path.join(ROOT, 'apps', a)).includes('src'),
);

it('finds the calls it checks (and the check fails on a call without provisioning)', () => {
  expect(
    messagingCalls('const m = createMessaging({ url, topology: t, provisioning: config.AMQP_TOPOLOGY });'),
  ).toHaveLength(1);
  expect(
    messagingCalls('createMessaging({ url, topology: f(a, b) })').filter((c) => !/provisioning:/.test(c)),
  ).toHaveLength(1);
});

// Every app sets its messaging up through the service kit's serviceMessaging(config, …), never with
// a createMessaging of its own, and that one call passes the provisioning mode and the transition
// setting for messages without user-id (docs/MESSAGING.md "Broker identity"): an app that did not
// would declare the whole topology (refused under own-queues) or ignore AMQP_MISSING_USER_ID=accept.
it.each(apps)(
  '%s sets up its messaging from its config through serviceMessaging, with no createMessaging of its own',
  (app) => {
    const files = sources(path.join(ROOT, 'apps', app, 'src'));
    const own = files.flatMap((f) => messagingCalls(readFileSync(f, 'utf8')).map(() => path.relative(ROOT, f)));
    expect(own).toEqual([]);
    expect(files.some((f) => /serviceMessaging\(config,/.test(readFileSync(f, 'utf8')))).toBe(true);
  },
);

it('serviceMessaging passes AMQP_TOPOLOGY and AMQP_MISSING_USER_ID on', () => {
  const calls = messagingCalls(readFileSync(path.join(ROOT, 'libs/service/src/messaging.ts'), 'utf8'));
  expect(calls).toHaveLength(1);
  expect(calls[0]).toMatch(/provisioning:\s*config\.AMQP_TOPOLOGY/);
  expect(calls[0]).toMatch(/producerCheck:\s*\{\s*missingUserId:\s*config\.AMQP_MISSING_USER_ID\s*\}/);
});
