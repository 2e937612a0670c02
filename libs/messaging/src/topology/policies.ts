import type { Logger } from 'pino';
import { primaryAmqpUrl } from '../urls';
import type { PolicyPlan } from './types';

/**
 * Policies cannot be declared over AMQP, so they go through the management HTTP API
 * (the rabbitmq_management plugin, enabled by the project's setup).
 *
 * Create if missing; an existing policy keeps the operator's tunables (a policy is where an
 * operator raises delivery-limit or max-length from the management UI without a redeploy, and a
 * restarting service must not undo that) but its safety keys are repaired (`reconcilePolicy`).
 * To go back to the code's values, delete the policy; the next start of any service recreates it
 * (docs/MESSAGING.md).
 */
export interface ManagementTarget {
  /** e.g. http://127.0.0.1:15672 */
  baseUrl: string;
  username: string;
  password: string;
  vhost: string;
}

/**
 * The management API of the broker an AMQP URL points at (same host, port 15672, same credentials);
 * of a list of nodes, the first one's (set RABBITMQ_MANAGEMENT_URL to the cluster's own address).
 */
export function managementTargetFor(amqpUrl: string, override?: string): ManagementTarget {
  const amqp = new URL(primaryAmqpUrl(amqpUrl));
  const mgmt = new URL(override ?? `http://${amqp.hostname}:15672`);
  const vhostPath = amqp.pathname.replace(/^\//, '');
  return {
    baseUrl: `${mgmt.protocol}//${mgmt.host}`,
    username: decodeURIComponent(mgmt.username || amqp.username || 'guest'),
    password: decodeURIComponent(mgmt.password || amqp.password || 'guest'),
    vhost: vhostPath === '' ? '/' : decodeURIComponent(vhostPath),
  };
}

export async function managementRequest(
  target: ManagementTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<Response> {
  const auth = Buffer.from(`${target.username}:${target.password}`).toString('base64');
  return fetch(`${target.baseUrl}/api${path}`, {
    method,
    headers: { authorization: `Basic ${auth}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
}

/**
 * The management API refused the credentials (401) or the operation (403): a least-privilege user
 * (tag `management`) may read its vhost's queues but not write, or even read, policies.
 */
export class ManagementRefusedError extends Error {
  override readonly name = 'ManagementRefusedError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
  ) {
    super(
      `management API ${method} ${path}: HTTP ${status} (the user may not do this; the topology admin applies policies)`,
    );
  }
}

const refused = (status: number): boolean => status === 401 || status === 403;

/** Keys whose value the code owns: without them a queue loses messages or blocks every producer. */
const OWNED_KEYS = ['dead-letter-exchange', 'dead-letter-routing-key', 'overflow'] as const;

export interface Reconciled {
  definition: Record<string, unknown>;
  /** Keys changed to restore safety (logged as a warning, written to the broker). */
  repaired: string[];
  /** Keys the operator set differently and that are kept. */
  kept: string[];
}

/**
 * What an existing policy must become. The operator's tunables stay; what the code owns is
 * restored:
 * - the dead-letter exchange and routing key: without them no DLQ, and a message past the
 *   delivery limit or over max-length would be dropped;
 * - `overflow=drop-head`: `reject-publish` (what older versions wrote) nacks a publish for every
 *   queue it is routed to as soon as one of them is full;
 * - `dead-letter-strategy` removed: `at-least-once` requires `reject-publish`;
 * - `delivery-limit` never below the code's (the restart budget, see plan.ts), `max-length` present.
 */
export function reconcilePolicy(current: Record<string, unknown>, wanted: Record<string, string | number>): Reconciled {
  const definition: Record<string, unknown> = { ...current };
  const repaired: string[] = [];
  for (const key of OWNED_KEYS) {
    if (key in wanted && definition[key] !== wanted[key]) {
      definition[key] = wanted[key];
      repaired.push(key);
    }
  }
  if ('dead-letter-strategy' in definition && !('dead-letter-strategy' in wanted)) {
    delete definition['dead-letter-strategy'];
    repaired.push('dead-letter-strategy');
  }
  const limit = definition['delivery-limit'];
  if (
    typeof wanted['delivery-limit'] === 'number' &&
    !(typeof limit === 'number' && limit >= wanted['delivery-limit'])
  ) {
    definition['delivery-limit'] = wanted['delivery-limit'];
    repaired.push('delivery-limit');
  }
  if (!('max-length' in definition) && 'max-length' in wanted) {
    definition['max-length'] = wanted['max-length'];
    repaired.push('max-length');
  }
  const kept = Object.keys(wanted).filter((k) => !repaired.includes(k) && definition[k] !== wanted[k]);
  return { definition, repaired, kept };
}

/**
 * Creates missing policies and repairs unsafe ones. Returns, per policy, the tunables an operator
 * set differently from the code (kept; the caller decides how loudly to say so).
 */
export async function ensurePolicies(
  target: ManagementTarget,
  policies: PolicyPlan[],
  logger: Logger,
): Promise<Array<{ policy: string; kept: string[] }>> {
  const vhost = encodeURIComponent(target.vhost);
  const differing: Array<{ policy: string; kept: string[] }> = [];
  for (const policy of policies) {
    const path = `/policies/${vhost}/${encodeURIComponent(policy.name)}`;
    const existing = await managementRequest(target, 'GET', path);
    if (refused(existing.status)) throw new ManagementRefusedError('GET', path, existing.status);
    if (existing.status !== 200 && existing.status !== 404)
      throw new Error(`management API GET ${path}: HTTP ${existing.status}`);
    if (existing.status === 200) {
      const current = (await existing.json()) as { definition: Record<string, unknown>; priority?: number };
      const { definition, repaired, kept } = reconcilePolicy(current.definition, policy.definition);
      if (kept.length > 0) differing.push({ policy: policy.name, kept });
      if (repaired.length === 0) continue;
      logger.warn(
        { policy: policy.name, repaired, was: current.definition },
        'policy was unsafe; repairing the keys the code owns',
      );
      await putPolicy(target, path, policy, definition, current.priority ?? policy.priority);
      continue;
    }
    await putPolicy(target, path, policy, policy.definition, policy.priority);
    logger.info({ policy: policy.name }, 'policy created');
  }
  return differing;
}

async function putPolicy(
  target: ManagementTarget,
  path: string,
  policy: PolicyPlan,
  definition: Record<string, unknown>,
  priority: number,
): Promise<void> {
  const put = await managementRequest(target, 'PUT', path, {
    pattern: policy.pattern,
    'apply-to': policy.applyTo,
    priority,
    definition,
  });
  if (refused(put.status)) throw new ManagementRefusedError('PUT', path, put.status);
  if (!put.ok) throw new Error(`management API PUT ${path}: HTTP ${put.status} ${await put.text()}`);
}
