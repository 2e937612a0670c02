import type { Logger } from 'pino';
import type { PolicyPlan } from './types';

/**
 * Policies cannot be declared over AMQP, so they go through the management HTTP API
 * (the rabbitmq_management plugin, enabled by the project's setup).
 *
 * Create-if-missing, never overwrite: a policy is where an operator tunes delivery-limit,
 * max-length or the dead-letter exchange from the management UI without a redeploy, and a
 * restarting service must not silently undo that. To go back to the code's values, delete the
 * policy; the next start of any service recreates it (docs/MESSAGING.md).
 */
export interface ManagementTarget {
  /** e.g. http://127.0.0.1:15672 */
  baseUrl: string;
  username: string;
  password: string;
  vhost: string;
}

/** The management API of the broker an AMQP URL points at (same host, port 15672, same credentials). */
export function managementTargetFor(amqpUrl: string, override?: string): ManagementTarget {
  const amqp = new URL(amqpUrl);
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

export async function ensurePolicies(target: ManagementTarget, policies: PolicyPlan[], logger: Logger): Promise<void> {
  const vhost = encodeURIComponent(target.vhost);
  for (const policy of policies) {
    const path = `/policies/${vhost}/${encodeURIComponent(policy.name)}`;
    const existing = await managementRequest(target, 'GET', path);
    if (existing.status === 200) {
      const current = (await existing.json()) as { definition: Record<string, unknown> };
      const changed = Object.keys(policy.definition).filter((k) => current.definition[k] !== policy.definition[k]);
      if (changed.length > 0) {
        logger.warn({ policy: policy.name, changed, current: current.definition }, 'policy differs from the code; keeping the broker\'s version');
      }
      continue;
    }
    if (existing.status !== 404) throw new Error(`management API GET ${path}: HTTP ${existing.status}`);
    const put = await managementRequest(target, 'PUT', path, {
      pattern: policy.pattern,
      'apply-to': policy.applyTo,
      priority: policy.priority,
      definition: policy.definition,
    });
    if (!put.ok) throw new Error(`management API PUT ${path}: HTTP ${put.status} ${await put.text()}`);
    logger.info({ policy: policy.name }, 'policy created');
  }
}
