// docker-compose.yml against the Compose Specification's JSON schema (vendored in infra/compose/,
// see its README: no Docker engine here, and Debian's docker-compose 1.29 predates the spec), and
// the stack's shape: every app a service built from its Dockerfile, as its own broker user.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import draft7 from 'ajv/dist/refs/json-schema-draft-07.json';
import { parse } from 'yaml';
import { APPS } from './k8s';

const ROOT = path.resolve(__dirname, '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
// Merge keys (`<<: *app`) are YAML 1.1, which Compose supports.
const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<
    string,
    {
      build?: { context: string; dockerfile: string };
      environment?: Record<string, string>;
      depends_on?: Record<string, { condition: string }>;
      healthcheck?: unknown;
      volumes?: string[];
    }
  >;
};
const credentials = JSON.parse(read('infra/rabbitmq/dev-credentials.json')) as {
  vhost: string;
  users: Record<string, string>;
};

/** Every apps/<name> directory, whether or not its code has landed yet, and every app of the deployment table. */
const appNames = [
  ...new Set([
    ...readdirSync(path.join(ROOT, 'apps'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name),
    ...APPS.map((a) => a.name),
  ]),
].sort();

/** The schema declares the draft-07 meta-schema by its https id; ajv ships it under the http one. */
let compiled: ReturnType<Ajv['compile']> | undefined;
function composeValidator() {
  if (compiled) return compiled;
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addMetaSchema({ ...draft7, $id: 'https://json-schema.org/draft-07/schema' });
  compiled = ajv.compile(JSON.parse(read('infra/compose/compose-spec.json')));
  return compiled;
}

it('validates against the Compose Specification schema', () => {
  const validate = composeValidator();
  const valid = validate(compose);
  expect(valid ? [] : validate.errors).toEqual([]);
});

it('the schema check refuses what Compose refuses (an unknown service key, a bad condition)', () => {
  const validate = composeValidator();
  expect(validate({ services: { a: { image: 'x', restart_policy: 'always' } } })).toBe(false);
  expect(validate({ services: { a: { image: 'x', depends_on: { b: { condition: 'service_ready' } } } } })).toBe(false);
});

describe.each(appNames)('%s', (app) => {
  const service = compose.services[app];

  it('has a compose service built from its own multi-stage, non-root Dockerfile with tini and a HEALTHCHECK', () => {
    expect(service?.build).toEqual({ context: '.', dockerfile: `infra/docker/${app}.Dockerfile` });
    const dockerfile = read(`infra/docker/${app}.Dockerfile`);
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(new RegExp(`nx run ${app}:build`));
    expect(dockerfile).toMatch(/^USER 10001:10001$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n.*\/healthz/m);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
  });

  it('connects as its own broker user to the community vhost, declaring only its own queues', () => {
    const url = new URL(service.environment!.AMQP_URL);
    expect(decodeURIComponent(url.username)).toBe(app);
    expect(decodeURIComponent(url.password)).toBe(credentials.users[app]);
    expect(decodeURIComponent(url.pathname.slice(1))).toBe(credentials.vhost);
    expect(service.environment!.AMQP_TOPOLOGY).toBe('own-queues');
  });

  it('starts after the broker and database are healthy and the migration has completed', () => {
    expect(service.depends_on).toMatchObject({
      rabbitmq: { condition: 'service_healthy' },
      postgres: { condition: 'service_healthy' },
      migrate: { condition: 'service_completed_successfully' },
    });
  });
});

it('gives every long-running service a healthcheck, in compose or in its image', () => {
  const missing = Object.entries(compose.services)
    .filter(([name]) => name !== 'migrate')
    .filter(
      ([, s]) => !s.healthcheck && !(s.build && /^HEALTHCHECK CMD|^HEALTHCHECK --/m.test(read(s.build.dockerfile))),
    )
    .map(([name]) => name);
  expect(missing).toEqual([]);
});

it('depends only on services that exist, and every depended-on service can become healthy', () => {
  for (const [name, s] of Object.entries(compose.services)) {
    for (const [dep, { condition }] of Object.entries(s.depends_on ?? {})) {
      expect([name, dep, dep in compose.services]).toEqual([name, dep, true]);
      if (condition === 'service_healthy') {
        const d = compose.services[dep];
        expect([
          dep,
          Boolean(d.healthcheck || (d.build && /^HEALTHCHECK (CMD|--)/m.test(read(d.build.dockerfile)))),
        ]).toEqual([dep, true]);
      }
    }
  }
});

it('mounts only files of the repository that exist (the broker config and definitions, Prometheus, Alertmanager, Grafana)', () => {
  const mounts = Object.values(compose.services).flatMap((s) =>
    (s.volumes ?? []).filter((v) => v.startsWith('./')).map((v) => v.split(':')[0]),
  );
  expect(mounts).toEqual(
    expect.arrayContaining([
      './infra/rabbitmq/rabbitmq.conf',
      './infra/rabbitmq/definitions.json',
      './infra/prometheus/prometheus.yml',
      './infra/alertmanager/alertmanager.yml',
      './infra/grafana/provisioning',
    ]),
  );
  expect(mounts.filter((m) => !existsSync(path.join(ROOT, m)))).toEqual([]);
});
