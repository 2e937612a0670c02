import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { backoffDelay } from './backoff';
import { errorMessage } from './errors';
import type { RuntimeMetrics } from './metrics';
import {
  dlqName,
  ensurePolicies,
  ManagementRefusedError,
  managementRequest,
  type ManagementTarget,
  type TopologyPlan,
} from './topology';

/** What a consumer asks before it subscribes, and hears when it changes. */
export interface PolicyGate {
  inForce(queue: string): boolean;
  watch(queue: string, listener: (inForce: boolean) => void): void;
}

export interface PolicyGuardOptions {
  target: ManagementTarget;
  plan: TopologyPlan;
  logger: Logger;
  metrics: RuntimeMetrics;
  /** How often the policies and queue depths are checked once everything is in force. */
  intervalMs: number;
  signal: AbortSignal;
  /**
   * Never write policies, only check that they are in force: the topology admin applies them
   * (provisioning `own-queues`). Also entered on its own when the management API refuses the
   * apply (401/403): a user without the `policymaker` tag cannot set policies.
   */
  verifyOnly?: boolean;
}

interface QueueRow {
  name: string;
  messages?: number;
  /** Absent until the broker's first statistics round for the queue (~5 s after it is declared). */
  effective_policy_definition?: Record<string, unknown>;
}

interface PolicyRow {
  pattern: string;
  'apply-to': string;
  priority: number;
  definition: Record<string, unknown>;
}

/** While a watched queue waits for its policy, look again this often (the broker's stats refresh every ~5 s). */
const PENDING_INTERVAL_MS = 1000;
/** Warn when a work queue is this full: past max-length its oldest messages go to the DLQ. */
const NEAR_FULL = 0.9;

/** A queue's dead-lettering is in force when the broker reports a dead-letter exchange and a delivery limit for it. */
export function policyInForce(definition: Record<string, unknown> | undefined): boolean {
  const dlx = definition?.['dead-letter-exchange'];
  return typeof dlx === 'string' && dlx !== '' && typeof definition?.['delivery-limit'] === 'number';
}

/**
 * For a queue the broker has no statistics for yet: the definitions that would win for it, by the
 * broker's rule (the matching policies of the highest priority). Ties are all returned, and all must
 * be safe, since which one the broker picks among them is not specified.
 */
export function winningPolicies(queue: string, policies: readonly PolicyRow[]): Array<Record<string, unknown>> {
  const matching = policies.filter(
    (p) => (p['apply-to'] === 'queues' || p['apply-to'] === 'all') && matches(p.pattern, queue),
  );
  const top = Math.max(...matching.map((p) => p.priority));
  return matching.filter((p) => p.priority === top).map((p) => p.definition);
}

function matches(pattern: string, queue: string): boolean {
  try {
    return new RegExp(pattern).test(queue);
  } catch {
    return true; // a pattern this engine cannot read: assume it applies, and so must be safe
  }
}

/**
 * Keeps "no message is consumed from a queue whose dead-letter exchange and delivery limit are not
 * in force". A policy is only a request: it can be missing (management API unreachable at start),
 * deleted or overridden by an operator's higher-priority policy later. So the guard asks the broker
 * what is *effective* for each work queue (`effective_policy_definition`), recreates or repairs our
 * policies on every pass, and tells the consumers, which subscribe only while it says yes.
 *
 * When the management API cannot be reached the last known state stands: policies live in the
 * broker and do not vanish because its HTTP port is unreachable. The same pass samples queue depths
 * for the overflow metrics (`messaging_queue_messages`, `messaging_queue_max_length`).
 */
export class PolicyGuard implements PolicyGate {
  private readonly state = new Map<string, boolean>();
  private readonly listeners = new Map<string, Array<(inForce: boolean) => void>>();
  private readonly workQueues: string[];
  /** Aborted to cut the loop's sleep short when a consumer starts waiting for its queue. */
  private nap = new AbortController();
  private watching = false;
  private verifyOnly: boolean;

  constructor(private readonly o: PolicyGuardOptions) {
    this.verifyOnly = o.verifyOnly === true;
    this.workQueues = o.plan.queues.filter((q) => q.role === 'work').map((q) => q.name);
  }

  inForce(queue: string): boolean {
    return this.state.get(queue) === true;
  }

  watch(queue: string, listener: (inForce: boolean) => void): void {
    this.listeners.set(queue, [...(this.listeners.get(queue) ?? []), listener]);
    if (!this.inForce(queue)) this.nap.abort();
  }

  /** Resolves once the policies are applied, retrying with backoff until the management API answers. */
  async apply(): Promise<void> {
    const { target, plan, logger, signal } = this.o;
    if (this.verifyOnly) {
      logger.info('queue policies are applied by the topology admin; checking only that they are in force');
      return;
    }
    for (let attempt = 0; ; attempt++) {
      try {
        for (const { policy, kept } of await ensurePolicies(target, plan.policies, logger)) {
          logger.warn({ policy, kept }, "policy tunables differ from the code; keeping the broker's");
        }
        break;
      } catch (err) {
        signal.throwIfAborted();
        if (err instanceof ManagementRefusedError) {
          // Retrying cannot help: the user lacks the right. Consumers still wait for the policies.
          this.verifyOnly = true;
          logger.warn(
            { err: err.message },
            'not allowed to apply queue policies; checking only that the topology admin has (consumers wait until they are in force)',
          );
          return;
        }
        logger.error(
          { err: errorMessage(err), attempt: attempt + 1 },
          'could not apply queue policies through the management API; not consuming yet, retrying',
        );
        await sleep(backoffDelay(attempt, { baseMs: 500, maxMs: 10_000 }), undefined, { signal });
      }
    }
  }

  /** Checks at once (right after apply() and the declarations): consumers of a queue in force are told now. */
  async checkNow(): Promise<void> {
    await this.check(true).catch((err: unknown) =>
      this.o.logger.warn({ err: errorMessage(err) }, 'could not check queue policies; retrying'),
    );
  }

  /** From now on, every interval (every second while a consumer waits), until the runtime stops. */
  watchInBackground(): void {
    if (this.watching) return;
    this.watching = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    const { logger, signal, intervalMs } = this.o;
    for (;;) {
      const pending = [...this.listeners.keys()].some((q) => !this.inForce(q));
      this.nap = new AbortController();
      await sleep(pending ? PENDING_INTERVAL_MS : intervalMs, undefined, {
        signal: AbortSignal.any([signal, this.nap.signal]),
        ref: false,
      }).catch(() => undefined);
      if (signal.aborted) return;
      try {
        await this.check(false);
      } catch (err) {
        logger.warn({ err: errorMessage(err) }, 'could not check queue policies; keeping the last known state');
      }
    }
  }

  private async check(justApplied: boolean): Promise<void> {
    try {
      await this.checkOnce(justApplied);
      this.o.metrics.policyChecks.inc({ outcome: 'ok' });
    } catch (err) {
      this.o.metrics.policyChecks.inc({ outcome: 'failed' });
      throw err;
    }
  }

  private async checkOnce(justApplied: boolean): Promise<void> {
    const { target, plan, logger, metrics } = this.o;
    // Recreate a deleted policy, repair an edited one (apply() has just done it before the first check).
    if (!justApplied && !this.verifyOnly) await ensurePolicies(target, plan.policies, logger);
    const path = `/queues/${encodeURIComponent(target.vhost)}?columns=name,messages,effective_policy_definition`;
    const res = await managementRequest(target, 'GET', path);
    if (!res.ok) throw new Error(`management API GET ${path}: HTTP ${res.status}`);
    const rows = new Map(((await res.json()) as QueueRow[]).map((r) => [r.name, r]));
    // A queue declared moments ago has no statistics yet: judge it by the policies that win for it.
    const fresh = this.workQueues.some((q) => rows.has(q) && rows.get(q)?.effective_policy_definition === undefined);
    const policies = fresh ? await this.policies() : [];
    for (const queue of this.workQueues) {
      const row = rows.get(queue);
      const effective = row?.effective_policy_definition;
      const definitions =
        row === undefined ? [] : effective !== undefined ? [effective] : winningPolicies(queue, policies);
      this.update(queue, definitions.length > 0 && definitions.every(policyInForce));
      const dlq = rows.get(dlqName(queue));
      if (dlq?.messages !== undefined) metrics.queueMessages.set({ queue: dlq.name }, dlq.messages);
      if (row?.messages === undefined) continue;
      metrics.queueMessages.set({ queue }, row.messages);
      const maxLength = row.effective_policy_definition?.['max-length'];
      if (typeof maxLength !== 'number') continue;
      metrics.queueMaxLength.set({ queue }, maxLength);
      if (row.messages >= maxLength * NEAR_FULL) {
        logger.error(
          { queue, messages: row.messages, maxLength, dlq: dlqName(queue) },
          'queue at or near its max-length: its oldest messages are dead-lettered (reason maxlen)',
        );
      }
    }
  }

  private async policies(): Promise<PolicyRow[]> {
    const path = `/policies/${encodeURIComponent(this.o.target.vhost)}`;
    const res = await managementRequest(this.o.target, 'GET', path);
    // Listing policies needs the policymaker tag: without it, a fresh queue waits for its statistics.
    if (this.verifyOnly && (res.status === 401 || res.status === 403)) return [];
    if (!res.ok) throw new Error(`management API GET ${path}: HTTP ${res.status}`);
    return (await res.json()) as PolicyRow[];
  }

  private update(queue: string, inForce: boolean): void {
    this.o.metrics.queuePolicyInForce.set({ queue }, inForce ? 1 : 0);
    if (this.state.get(queue) === inForce) return;
    const before = this.state.get(queue);
    this.state.set(queue, inForce);
    if (!inForce && before === true)
      this.o.logger.error(
        { queue },
        'queue no longer has a dead-letter exchange and delivery limit in force; its consumers stop until it has',
      );
    if (inForce && this.listeners.has(queue)) this.o.logger.info({ queue }, 'queue policy in force; consuming');
    for (const listener of this.listeners.get(queue) ?? []) listener(inForce);
  }
}
