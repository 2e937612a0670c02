// infra/rabbitmq/rabbitmq.conf through the installed RabbitMQ's own configuration schemas
// (cuttlefish, as the node parses it at boot): an unknown key or a bad value would keep the broker
// from starting. The definitions directory is pointed at a temporary copy (the schema checks it exists).
import { execFile } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../../..');
const ESCRIPT = path.join(ROOT, 'infra/tools/validate-rabbitmq-conf.escript');
const DEBIAN_LIB = '/usr/lib/rabbitmq/lib';
const installed = existsSync(DEBIAN_LIB)
  ? readdirSync(DEBIAN_LIB)
      .filter((d) => d.startsWith('rabbitmq_server-'))
      .map((d) => path.join(DEBIAN_LIB, d, 'plugins'))
  : [];
const PLUGINS =
  [process.env.RABBITMQ_HOME && path.join(process.env.RABBITMQ_HOME, 'plugins'), ...installed].find(
    (p) => p && existsSync(p),
  ) || undefined;

let dir: string;
beforeAll(() => {
  if (!PLUGINS) throw new Error('no RabbitMQ installation found (set RABBITMQ_HOME): the schema lives in its plugins');
  dir = mkdtempSync(path.join(tmpdir(), 'rabbitmq-conf-'));
  mkdirSync(path.join(dir, 'definitions.d'));
  copyFileSync(path.join(ROOT, 'infra/rabbitmq/definitions.json'), path.join(dir, 'definitions.d/20-community.json'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function validate(conf: string): Promise<{ ok: boolean; output: string }> {
  const file = path.join(dir, `rabbitmq-${Math.random().toString(36).slice(2)}.conf`);
  writeFileSync(file, conf.replace('/etc/rabbitmq/definitions.d', path.join(dir, 'definitions.d')));
  try {
    const { stdout } = await run('escript', [ESCRIPT, PLUGINS as string, file]);
    return { ok: true, output: stdout };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

const conf = readFileSync(path.join(ROOT, 'infra/rabbitmq/rabbitmq.conf'), 'utf8');

it('is accepted by the broker’s configuration schema', async () => {
  const result = await validate(conf);
  expect(result).toMatchObject({ ok: true });
});

it('the check refuses an unknown key and a malformed value', async () => {
  expect((await validate(`${conf}\nquorum_queue.initial_cluster_size = 3\n`)).output).toMatch(
    /quorum_queue\.initial_cluster_size/,
  );
  expect((await validate(conf.replace('consumer_timeout = 1800000', 'consumer_timeout = 30min'))).ok).toBe(false);
  // max_message_size is bounded by the broker (512 MiB at most): a value past it does not start a node.
  expect((await validate(conf.replace('max_message_size = 1048576', 'max_message_size = 1073741824'))).ok).toBe(false);
});

it('accepts the RabbitmqCluster’s additionalConfig (infra/k8s/platform) too, with the same consumer_timeout and max_message_size', async () => {
  const cluster = parse(readFileSync(path.join(ROOT, 'infra/k8s/platform/rabbitmq.yaml'), 'utf8')) as {
    spec: { rabbitmq: { additionalConfig: string } };
  };
  const additional = cluster.spec.rabbitmq.additionalConfig;
  expect(await validate(additional)).toMatchObject({ ok: true });
  const timeout = (text: string) => text.match(/^consumer_timeout = (\d+)$/m)?.[1];
  expect(timeout(additional)).toBe(timeout(conf));
  const maxSize = (text: string) => text.match(/^\s*max_message_size = (\d+)$/m)?.[1];
  expect(maxSize(conf)).toBe('1048576');
  expect(maxSize(additional)).toBe(maxSize(conf));
});
