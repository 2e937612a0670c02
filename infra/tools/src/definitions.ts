// RabbitMQ definitions (the format of `rabbitmqctl export_definitions` / `load_definitions`) from the
// topology data: libs/contracts' COMMUNITY_TOPOLOGY through libs/messaging's plan() (retry tiers,
// DLQs, policies), and SERVICE_ACCESS (users and their least-privilege permissions).
import { createHash } from 'node:crypto';
import {
  COMMUNITY_TOPOLOGY,
  COMMUNITY_VHOST,
  OBSERVER_USERS,
  SERVICE_ACCESS,
  TOPOLOGY_ADMIN_USER,
} from '@community/contracts';
import {
  accessProblems,
  permissionsFor,
  planTopology,
  type ServiceAccess,
  type Topology,
  type TopologyPlan,
} from '@community/messaging';

export interface DefinitionsOptions {
  vhost: string;
  /** Prepended to every user name: tests import the definitions with users of their own. */
  userPrefix?: string;
  /** The password of each user (by unprefixed name). Default: devPassword(name). */
  passwordOf?: (user: string) => string;
}

/**
 * The development password of a generated user. The committed definitions carry hashes of these
 * only; real passwords come from Kubernetes Secrets and are set by the topology Job (or the
 * Messaging Topology Operator's User), never committed (docs/DEPLOY.md "Secrets").
 */
export const devPassword = (user: string): string => `${user}-dev-password`;

/**
 * RabbitMQ's `rabbit_password_hashing_sha256`: base64(salt ‖ sha256(salt ‖ password)), 4-byte salt.
 * Written here because no npm package does it (the broker's own tools are Erlang). The salt is
 * derived from the user name instead of random so the generated file is reproducible and a
 * test can compare it byte for byte; these are development passwords only.
 */
export function rabbitPasswordHash(user: string, password: string): string {
  const salt = createHash('sha256').update(`community-definitions-salt:${user}`).digest().subarray(0, 4);
  const digest = createHash('sha256')
    .update(Buffer.concat([salt, Buffer.from(password, 'utf8')]))
    .digest();
  return Buffer.concat([salt, digest]).toString('base64');
}

export interface Definitions {
  users: Array<{
    name: string;
    password_hash: string;
    hashing_algorithm: string;
    tags: string[];
    limits: Record<string, never>;
  }>;
  vhosts: Array<{ name: string }>;
  permissions: Array<{ user: string; vhost: string; configure: string; write: string; read: string }>;
  topic_permissions: Array<{ user: string; vhost: string; exchange: string; write: string; read: string }>;
  policies: Array<{
    vhost: string;
    name: string;
    pattern: string;
    'apply-to': string;
    priority: number;
    definition: Record<string, unknown>;
  }>;
  queues: Array<{ name: string; vhost: string; durable: true; auto_delete: false; arguments: Record<string, unknown> }>;
  exchanges: Array<{
    name: string;
    vhost: string;
    type: string;
    durable: true;
    auto_delete: false;
    internal: false;
    arguments: Record<string, never>;
  }>;
  bindings: Array<{
    source: string;
    vhost: string;
    destination: string;
    destination_type: 'queue' | 'exchange';
    routing_key: string;
    arguments: Record<string, unknown>;
  }>;
}

/** The community's topology, its plan and access data, refused when inconsistent. */
export function communityModel(
  topology: Topology = COMMUNITY_TOPOLOGY,
  access: readonly ServiceAccess[] = SERVICE_ACCESS,
): { topology: Topology; plan: TopologyPlan; access: readonly ServiceAccess[] } {
  const plan = planTopology(topology);
  const problems = accessProblems(topology, plan, access);
  if (problems.length > 0)
    throw new Error(
      `the access data (libs/contracts/src/access.ts) does not match the topology:\n  ${problems.join('\n  ')}`,
    );
  return { topology, plan, access };
}

export function buildDefinitions(options: DefinitionsOptions): Definitions {
  const { topology, plan, access } = communityModel();
  const { vhost } = options;
  const prefix = options.userPrefix ?? '';
  const passwordOf = options.passwordOf ?? devPassword;
  const user = (name: string, tags: string[]) => ({
    name: prefix + name,
    password_hash: rabbitPasswordHash(prefix + name, passwordOf(name)),
    hashing_algorithm: 'rabbit_password_hashing_sha256',
    tags,
    limits: {} as Record<string, never>,
  });
  const services = access.map((a) => ({ a, p: permissionsFor(topology, plan, a) }));
  return {
    users: [
      user(TOPOLOGY_ADMIN_USER, ['administrator']),
      ...services.map(({ a }) => user(a.user, [...a.tags])),
      ...OBSERVER_USERS.map((o) => user(o.user, [...o.tags])),
    ],
    vhosts: [{ name: vhost }],
    permissions: [
      // Declares everything and applies policies; imports users (which the management API reserves
      // to administrators). Its permissions reach this vhost only.
      { user: prefix + TOPOLOGY_ADMIN_USER, vhost, configure: '.*', write: '.*', read: '.*' },
      ...services.map(({ a, p }) => ({
        user: prefix + a.user,
        vhost,
        configure: p.configure,
        write: p.write,
        read: p.read,
      })),
      ...OBSERVER_USERS.map((o) => ({ user: prefix + o.user, vhost, configure: '^$', write: '^$', read: '^$' })),
    ],
    topic_permissions: services.flatMap(({ a, p }) =>
      p.topic.map((t) => ({ user: prefix + a.user, vhost, exchange: t.exchange, write: t.write, read: t.read })),
    ),
    policies: plan.policies.map((p) => ({
      vhost,
      name: p.name,
      pattern: p.pattern,
      'apply-to': p.applyTo,
      priority: p.priority,
      definition: p.definition,
    })),
    queues: plan.queues.map((q) => ({
      name: q.name,
      vhost,
      durable: true,
      auto_delete: false,
      arguments: q.arguments,
    })),
    exchanges: plan.exchanges.map((x) => ({
      name: x.name,
      vhost,
      type: x.type,
      durable: true,
      auto_delete: false,
      internal: false,
      arguments: {},
    })),
    // Exchange-to-exchange bindings first (a headers exchange fed by the topic exchange), then the
    // queues' bindings; a header binding carries x-match and the headers as its arguments.
    bindings: [
      ...plan.exchangeBindings.map((b) => ({
        source: b.source,
        vhost,
        destination: b.destination,
        destination_type: 'exchange' as const,
        routing_key: b.routingKey,
        arguments: b.arguments ?? {},
      })),
      ...plan.bindings.map((b) => ({
        source: b.exchange,
        vhost,
        destination: b.queue,
        destination_type: 'queue' as const,
        routing_key: b.routingKey,
        arguments: b.arguments ?? {},
      })),
    ],
  };
}

/** The committed file: vhost `community`, development password hashes. */
export function communityDefinitions(): Definitions {
  return buildDefinitions({ vhost: COMMUNITY_VHOST });
}

/**
 * For the compose broker only (never a deployment): guest/guest as administrator on `/` and the
 * community vhost, as a development broker has it, so `npm test` and the local tools work against
 * it. Imported next to the community definitions (rabbitmq.conf points at the directory).
 */
export function devGuestDefinitions(vhost: string): Pick<Definitions, 'users' | 'vhosts' | 'permissions'> {
  return {
    users: [
      {
        name: 'guest',
        password_hash: rabbitPasswordHash('guest', 'guest'),
        hashing_algorithm: 'rabbit_password_hashing_sha256',
        tags: ['administrator'],
        limits: {},
      },
    ],
    vhosts: [{ name: '/' }],
    permissions: ['/', vhost].map((v) => ({ user: 'guest', vhost: v, configure: '.*', write: '.*', read: '.*' })),
  };
}
