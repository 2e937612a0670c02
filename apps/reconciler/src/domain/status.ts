import type { Finding } from './watchdog';
import type { LostWorkVerdict } from './lost-work';
import type { BreakerReading, QueueSample, RateLimitReading, StuckWork } from './facts';
import { drainOf, drainText, duration, oldestAgeMs, type Drain } from './drain';

/** One line of the checklist (`GET /v1/admin/status`, `npm run ops -- status`). */
export interface Check {
  name: CheckName;
  ok: boolean;
  value: unknown;
  threshold: unknown;
  /** The docs/RUNBOOK.md section to follow when it fails. */
  runbook: string;
  /** What failed, naming the queue / job / producer, for someone on their first shift. */
  detail: string;
}

export const CHECK_NAMES = [
  'backlog',
  'oldest-message',
  'consumers',
  'stale-leases',
  'counter-drift',
  'outbox-lag',
  'fanout-chunks',
  'jobs',
  'breakers',
  'lost-work',
] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

/** `## check: <name>` in docs/RUNBOOK.md, as GitHub renders the anchor. */
export const runbookFor = (name: CheckName): string => `docs/RUNBOOK.md#check-${name}`;

export interface JobRun {
  job: string;
  outcome: string;
  startedAt: Date;
  finishedAt: Date | null;
  error: string | null;
}

export interface StatusFacts {
  now: Date;
  /** When this reconciler started: a job is not "late" before it had a chance to run. */
  startedAt: Date;
  workQueues: readonly string[];
  /** The management API's answer, or why there is none. */
  queues: readonly QueueSample[] | { error: string };
  watchdog: readonly Finding[];
  stuck: StuckWork;
  lastRecount: { job: string; finishedAt: string; drifted: number } | null;
  /** The last run of each job (absent: never ran). */
  lastRuns: readonly JobRun[];
  jobIntervalsMs: Readonly<Record<string, number>>;
  /** Every `*_breaker_open` series read from the services' /metrics; `error` when a source did not answer. */
  breakers: readonly BreakerReading[] | { error: string };
  /** Email leases whose holder process is dead, not taken over yet (store/dead-leases.ts); absent: not read. */
  deadHolderLeases?: { count: number; until: Date | null };
  /** The services' configured rate limits and the queues they apply to (GET /v1/flow-control); absent: unknown. */
  rateLimits?: readonly RateLimitReading[];
  /** Due work no queue holds (domain/lost-work.ts); absent: not checked (no line). */
  lostWork?: LostWorkVerdict;
  /** drainEtaMaxMs: how long a shrinking queue may take to drain before oldest-message fails (absent: oldestMessageMaxMs). */
  thresholds: {
    fanoutAfterMs: number;
    backlogMax: number;
    oldestMessageMaxMs: number;
    outboxLagMaxMs: number;
    drainEtaMaxMs?: number;
  };
}

/** An open breaker for the `breakers` line: where, what it pauses, and the provider's last error. */
function describeOpenBreaker(b: BreakerReading): string {
  const pauses = b.pauses?.length ? `, pausing ${b.pauses.join(', ')}` : '';
  const last = b.lastError
    ? `; last error${b.lastErrorAt ? ` at ${b.lastErrorAt}` : ''}: ${b.lastError}`
    : b.lastError === undefined
      ? ''
      : '; no error recorded';
  return `${b.series} open at ${b.source}${pauses}${last}`;
}

/** The checklist from the facts: pure, so every rule has a spec (status.spec.ts). */
export function evaluateStatus(f: StatusFacts): { ok: boolean; checks: Check[] } {
  const checks: Check[] = [];
  const add = (name: CheckName, ok: boolean, value: unknown, threshold: unknown, detail: string) =>
    checks.push({ name, ok, value, threshold, runbook: runbookFor(name), detail });

  if ('error' in f.queues) {
    for (const name of ['backlog', 'oldest-message', 'consumers'] as const)
      add(name, false, null, null, `RabbitMQ management API: ${f.queues.error}`);
  } else {
    const work = f.workQueues.map(
      (name) => (f.queues as readonly QueueSample[]).find((q) => q.name === name) ?? { name, missing: true as const },
    );
    const missing = work.filter((q): q is { name: string; missing: true } => 'missing' in q).map((q) => q.name);
    const present = work.filter((q): q is QueueSample => !('missing' in q));

    const drains = new Map(present.map((q) => [q.name, drainOf(q, present, f.rateLimits ?? [])]));
    const drainOfQ = (q: QueueSample) => drains.get(q.name) as Drain;
    const over = present.filter((q) => q.ready > f.thresholds.backlogMax);
    const worst = present.reduce<QueueSample | undefined>((a, q) => (!a || q.ready > a.ready ? q : a), undefined);
    const waiting = present.filter((q) => q.ready > 0).map((q) => drainText(q, drainOfQ(q)));
    add(
      'backlog',
      over.length === 0,
      worst
        ? { queue: worst.name, ready: worst.ready, perSecond: drainOfQ(worst).perSecond, etaMs: drainOfQ(worst).etaMs }
        : null,
      f.thresholds.backlogMax,
      over.length === 0
        ? ['every work queue is under the threshold', ...waiting].join('; ')
        : over.map((q) => drainText(q, drainOfQ(q))).join('; '),
    );

    // A quorum queue's age is an estimate (ready ÷ drain rate), which is also its drain's ETA: a
    // queue that shrinks and will be empty within drainEtaMaxMs is a healthy drain, not an old
    // message (docs/RECONCILER.md "Status": the rule and why).
    const etaMax = f.thresholds.drainEtaMaxMs ?? f.thresholds.oldestMessageMaxMs;
    const ages = present.map((q) => {
      const d = drainOfQ(q);
      return {
        queue: q.name,
        ageMs: oldestAgeMs(q, f.now),
        estimated: q.headTimestamp === null,
        healthyDrain: q.headTimestamp === null && d.shrinking && d.etaMs !== null && d.etaMs <= etaMax,
        q,
        d,
      };
    });
    const old = ages.filter((a) => a.ageMs === null || (a.ageMs > f.thresholds.oldestMessageMaxMs && !a.healthyDrain));
    const draining = ages.filter(
      (a) => a.ageMs !== null && a.ageMs > f.thresholds.oldestMessageMaxMs && a.healthyDrain,
    );
    const oldest = ages.reduce<{ queue: string; ageMs: number | null } | undefined>(
      (a, x) => (!a || x.ageMs === null || (a.ageMs !== null && x.ageMs > a.ageMs) ? x : a),
      undefined,
    );
    const ageText = (a: (typeof ages)[number]) =>
      a.ageMs === null
        ? `${a.queue}: messages wait and none is consumed`
        : a.estimated
          ? `${a.queue}: oldest ≈ ${duration(a.ageMs)} (estimate: ${drainText(a.q, a.d).slice(a.queue.length + 2)})`
          : `${a.queue}: oldest ${duration(a.ageMs)}`;
    add(
      'oldest-message',
      old.length === 0,
      oldest ? { queue: oldest.queue, ageMs: oldest.ageMs } : null,
      f.thresholds.oldestMessageMaxMs,
      old.length === 0
        ? [
            'no work queue holds an old message',
            ...draining.map((a) => `${drainText(a.q, a.d)}, shrinking (within the ${duration(etaMax)} drain bound)`),
          ].join('; ')
        : old.map(ageText).join('; '),
    );

    const idle = present.filter((q) => q.consumers === 0).map((q) => q.name);
    const stalled = f.watchdog.filter((w) => w.kind === 'stalled').map((w) => w.queue);
    // A consumer paused by an open breaker is the intended state of an outage: say so, and send the
    // reader to the breaker's section, which is where the cause (and the fix) is.
    const pausedBy = (queue: string) =>
      'error' in f.breakers ? undefined : f.breakers.find((b) => b.open && b.pauses?.includes(queue));
    const noConsumer = (queue: string) => {
      const b = pausedBy(queue);
      return b
        ? `${queue}: no consumer, paused by the breaker (${b.series}${b.lastError ? `: ${b.lastError}` : ''}); it resumes by itself when a probe succeeds`
        : `${queue}: no consumer`;
    };
    const bad = [
      ...missing.map((q) => `${q}: queue missing`),
      ...idle.map(noConsumer),
      ...stalled.map((q) => `${q}: consumers attached but nothing acked while it grows`),
    ];
    add(
      'consumers',
      bad.length === 0,
      Object.fromEntries(present.map((q) => [q.name, q.consumers])),
      '≥ 1 per work queue, acking',
      bad.length === 0 ? 'every work queue has a consumer' : bad.join('; '),
    );
    if (missing.length === 0 && stalled.length === 0 && idle.length > 0 && idle.every((q) => pausedBy(q)))
      checks[checks.length - 1].runbook = runbookFor('breakers');
  }

  // Leases of a dead process are said before they expire: without it, a restarted service waiting
  // on them looked healthy everywhere (docs/RECONCILER.md "Status").
  const dead = f.deadHolderLeases && f.deadHolderLeases.count > 0 ? f.deadHolderLeases : undefined;
  const leaseLines = [
    ...(dead
      ? [
          `${dead.count} messages wait for leases of a dead process${dead.until ? ` until ${dead.until.toISOString().slice(11, 16)} UTC` : ''} (a live email-service takes each over at its next delivery)`,
        ]
      : []),
    ...(f.stuck.emailLeasesExpired > 0
      ? [`${f.stuck.emailLeasesExpired} email deliveries in 'sending' with a lease expired and nobody taking over`]
      : []),
  ];
  add(
    'stale-leases',
    leaseLines.length === 0,
    f.stuck.emailLeasesExpired + (dead?.count ?? 0),
    0,
    leaseLines.length === 0
      ? 'no expired email lease without takeover, none held by a dead process'
      : leaseLines.join('; '),
  );

  const drift = f.lastRecount;
  add(
    'counter-drift',
    !drift || drift.drifted === 0,
    drift ? drift.drifted : null,
    0,
    !drift
      ? 'no recount has run yet'
      : drift.drifted === 0
        ? `no drift at the last recount (${drift.job}, ${drift.finishedAt})`
        : `${drift.drifted} unread counters differed from their recount at ${drift.finishedAt} (${drift.job}; repaired and audited in counter_repairs)`,
  );

  const lagMs = f.stuck.outboxLagSeconds * 1000;
  add(
    'outbox-lag',
    lagMs <= f.thresholds.outboxLagMaxMs,
    Math.round(f.stuck.outboxLagSeconds),
    Math.round(f.thresholds.outboxLagMaxMs / 1000),
    lagMs <= f.thresholds.outboxLagMaxMs
      ? 'outbox rows are published in time'
      : `the oldest unsent outbox row is ${Math.round(f.stuck.outboxLagSeconds)} s old${f.stuck.outboxProducers.length ? ` (producers: ${f.stuck.outboxProducers.join(', ')})` : ''}`,
  );

  add(
    'fanout-chunks',
    f.stuck.fanoutChunks === 0,
    f.stuck.fanoutChunks,
    0,
    f.stuck.fanoutChunks === 0
      ? 'every fan-out finishes in time'
      : `${f.stuck.fanoutChunks} feed-service fan-out chunks not done ${Math.round(f.thresholds.fanoutAfterMs / 1000)} s after planning (the stuck-work job re-publishes them to feed-service.fanout)`,
  );

  const late: string[] = [];
  for (const [job, intervalMs] of Object.entries(f.jobIntervalsMs)) {
    const run = f.lastRuns.find((r) => r.job === job);
    const dueBy = 2 * intervalMs + 60_000; // an interval, its jitter, and a run that takes a while
    if (!run) {
      if (f.now.getTime() - f.startedAt.getTime() > dueBy) late.push(`${job}: never ran`);
    } else if (['failed', 'aborted', 'abandoned'].includes(run.outcome)) {
      late.push(`${job}: last run ${run.outcome}${run.error ? ` (${run.error.slice(0, 200)})` : ''}`);
    } else if (f.now.getTime() - run.startedAt.getTime() > dueBy) {
      late.push(
        `${job}: last run started ${Math.round((f.now.getTime() - run.startedAt.getTime()) / 1000)} s ago (every ${Math.round(intervalMs / 1000)} s)`,
      );
    }
  }
  add(
    'jobs',
    late.length === 0,
    f.lastRuns.map((r) => ({ job: r.job, outcome: r.outcome, startedAt: r.startedAt.toISOString() })),
    'each job ran within 2 intervals and did not fail',
    late.length === 0 ? 'every job runs on schedule' : late.join('; '),
  );

  if ('error' in f.breakers) add('breakers', false, null, 'closed', f.breakers.error);
  else {
    const open = f.breakers.filter((b) => b.open);
    add(
      'breakers',
      open.length === 0,
      f.breakers.map((b) => ({ source: b.source, series: b.series, open: b.open })),
      'closed',
      open.length === 0
        ? f.breakers.length
          ? 'every circuit breaker is closed'
          : 'no breaker source configured (BREAKER_METRICS_URLS)'
        : open.map(describeOpenBreaker).join('; '),
    );
  }
  // The value: rows at least lost over every queue (per queue: GET /v1/admin/lost-work, `ops lost-work`).
  if (f.lostWork)
    add(
      'lost-work',
      f.lostWork.ok,
      f.lostWork.queues.reduce((n, q) => n + q.lost, 0),
      0,
      f.lostWork.detail,
    );
  return { ok: checks.every((c) => c.ok), checks };
}
