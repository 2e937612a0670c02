import { oldestAgeMs } from './drain';
import { evaluateStatus, type StatusFacts } from './status';
import type { QueueSample } from './facts';

const now = new Date('2026-12-01T12:00:00Z');
const q = (name: string, over: Partial<QueueSample> = {}): QueueSample => ({
  name,
  messages: 0,
  ready: 0,
  unacked: 0,
  consumers: 1,
  acked: 0,
  ackRate: 0,
  headTimestamp: null,
  ...over,
});
const healthy = (): StatusFacts => ({
  now,
  startedAt: new Date(now.getTime() - 3_600_000),
  workQueues: ['a', 'b'],
  queues: [q('a'), q('b'), q('a.dlq')],
  watchdog: [],
  stuck: { outboxUnsent: 0, outboxLagSeconds: 0, outboxProducers: [], emailLeasesExpired: 0, fanoutChunks: 0 },
  lastRecount: { job: 'counters.recount-recent', finishedAt: now.toISOString(), drifted: 0 },
  lastRuns: [
    { job: 'j', outcome: 'succeeded', startedAt: new Date(now.getTime() - 30_000), finishedAt: now, error: null },
  ],
  jobIntervalsMs: { j: 60_000 },
  breakers: [{ source: 'http://email/metrics', series: 'email_smtp_breaker_open', open: false }],
  thresholds: { fanoutAfterMs: 600_000, backlogMax: 100, oldestMessageMaxMs: 60_000, outboxLagMaxMs: 60_000 },
});
const failing = (f: StatusFacts) =>
  evaluateStatus(f)
    .checks.filter((c) => !c.ok)
    .map((c) => [c.name, c.detail, c.runbook]);

describe('evaluateStatus', () => {
  it('is ok on a healthy stack, every check named with its runbook section', () => {
    const s = evaluateStatus(healthy());
    expect(s.ok).toBe(true);
    expect(s.checks.map((c) => c.name)).toEqual([
      'backlog',
      'oldest-message',
      'consumers',
      'stale-leases',
      'counter-drift',
      'outbox-lag',
      'fanout-chunks',
      'jobs',
      'breakers',
    ]);
    expect(s.checks[0].runbook).toBe('docs/RUNBOOK.md#check-backlog');
  });

  it('names the queue without consumer, and the stalled one', () => {
    const f = {
      ...healthy(),
      queues: [q('a', { consumers: 0, ready: 3, messages: 3 }), q('b')],
      watchdog: [{ queue: 'b', kind: 'stalled' as const, detail: '' }],
    };
    expect(failing(f)).toEqual([
      ['oldest-message', 'a: messages wait and none is consumed', 'docs/RUNBOOK.md#check-oldest-message'],
      [
        'consumers',
        'a: no consumer; b: consumers attached but nothing acked while it grows',
        'docs/RUNBOOK.md#check-consumers',
      ],
    ]);
  });

  it('names a backlog over the threshold and estimates the oldest age from the ack rate', () => {
    const f = { ...healthy(), queues: [q('a', { ready: 500, ackRate: 5 }), q('b')] };
    expect(failing(f)).toEqual([
      ['backlog', 'a: 500 ready, draining 5.0/s, ETA 100 s', 'docs/RUNBOOK.md#check-backlog'],
      [
        'oldest-message',
        'a: oldest ≈ 100 s (estimate: 500 ready, draining 5.0/s, ETA 100 s)',
        'docs/RUNBOOK.md#check-oldest-message',
      ],
    ]);
    expect(oldestAgeMs(q('x', { ready: 1, headTimestamp: now.getTime() / 1000 - 7 }), now)).toBe(7000);
  });

  it('fails on drift, outbox lag, expired leases, stuck fan-out chunks, a failed or late job and an open breaker', () => {
    const f: StatusFacts = {
      ...healthy(),
      lastRecount: { job: 'counters.sweep', finishedAt: 't', drifted: 3 },
      stuck: {
        outboxUnsent: 2,
        outboxLagSeconds: 120,
        outboxProducers: ['notification-service'],
        emailLeasesExpired: 1,
        fanoutChunks: 4,
      },
      lastRuns: [{ job: 'j', outcome: 'failed', startedAt: now, finishedAt: now, error: 'boom' }],
      jobIntervalsMs: { j: 60_000, k: 60_000 },
      startedAt: new Date(now.getTime() - 4 * 60_000),
      breakers: [{ source: 's', series: 'email_smtp_breaker_open', open: true }],
    };
    expect(failing(f).map(([name, detail]) => `${name}: ${detail}`)).toEqual([
      "stale-leases: 1 email deliveries in 'sending' with a lease expired and nobody taking over",
      'counter-drift: 3 unread counters differed from their recount at t (counters.sweep; repaired and audited in counter_repairs)',
      'outbox-lag: the oldest unsent outbox row is 120 s old (producers: notification-service)',
      'fanout-chunks: 4 feed-service fan-out chunks not done 600 s after planning (the stuck-work job re-publishes them to feed-service.fanout)',
      'jobs: j: last run failed (boom); k: never ran',
      'breakers: email_smtp_breaker_open open at s',
    ]);
  });

  it('fails the broker checks, naming the cause, when the management API does not answer', () => {
    expect(failing({ ...healthy(), queues: { error: 'connect ECONNREFUSED' } }).map(([n]) => n)).toEqual([
      'backlog',
      'oldest-message',
      'consumers',
    ]);
  });
});

describe('evaluateStatus: lines that say why', () => {
  const openSmtp = {
    source: 'http://email/metrics',
    series: 'email_smtp_breaker_open',
    open: true,
    lastError: 'connect ECONNREFUSED 127.0.0.1:2525',
    lastErrorAt: '2026-12-01T11:59:00.000Z',
    pauses: ['a'],
  };

  it('says a queue without consumer is paused by the breaker, and sends the reader to the breaker section', () => {
    const f = { ...healthy(), queues: [q('a', { consumers: 0 }), q('b')], breakers: [openSmtp] };
    expect(failing(f)).toEqual([
      [
        'consumers',
        'a: no consumer, paused by the breaker (email_smtp_breaker_open: connect ECONNREFUSED 127.0.0.1:2525); it resumes by itself when a probe succeeds',
        'docs/RUNBOOK.md#check-breakers',
      ],
      [
        'breakers',
        'email_smtp_breaker_open open at http://email/metrics, pausing a; last error at 2026-12-01T11:59:00.000Z: connect ECONNREFUSED 127.0.0.1:2525',
        'docs/RUNBOOK.md#check-breakers',
      ],
    ]);
  });

  it('keeps "no consumer" (and the consumers section) for a queue the open breaker does not pause', () => {
    const f = { ...healthy(), queues: [q('a'), q('b', { consumers: 0 })], breakers: [openSmtp] };
    expect(failing(f)[0]).toEqual(['consumers', 'b: no consumer', 'docs/RUNBOOK.md#check-consumers']);
  });
});

describe('evaluateStatus: drain rate and ETA', () => {
  const smtp = [{ source: 'http://email/metrics', name: 'SMTP rate limit', perSecond: 20, queues: ['a', 'b'] }];
  const line = (f: StatusFacts, name: string) => evaluateStatus(f).checks.find((c) => c.name === name);

  it('gives the rate, the limit it runs at and the ETA, even when the backlog is under the threshold', () => {
    const f = {
      ...healthy(),
      queues: [q('a', { ready: 80, ackRate: 19, drainRate: 19.5, readyTrend: -3 }), q('b')],
      rateLimits: smtp,
    };
    expect(line(f, 'backlog')).toMatchObject({
      ok: true,
      detail: 'every work queue is under the threshold; a: 80 ready, draining 20/s (SMTP rate limit 20/s), ETA 4 s',
    });
  });

  it('names no limit when the drain is well below it, and says "not draining" when nothing is acked', () => {
    const f = {
      ...healthy(),
      queues: [q('a', { ready: 40, drainRate: 2 }), q('b', { ready: 7, drainRate: 0 })],
      rateLimits: smtp,
    };
    expect(line(f, 'backlog')?.detail).toBe(
      'every work queue is under the threshold; a: 40 ready, draining 2.0/s, ETA 20 s; b: 7 ready, not draining',
    );
  });

  it('estimates the age from the minute-averaged rate, not from one near-zero 5 s sample', () => {
    // The spike the issue saw: 17,000 ready and an instantaneous ack rate of 1.2/s read 14,167 s.
    const blip = q('a', { ready: 17_000, ackRate: 1.2, drainRate: 19.8, readyTrend: -12 });
    expect(oldestAgeMs(blip, now)).toBe(858_586);
    expect(oldestAgeMs({ ...blip, drainRate: undefined }, now)).toBe(14_166_667); // the broker's 5 s figure alone
  });

  it('keeps a shrinking queue whose ETA is within the drain bound green, and says why', () => {
    const f = {
      ...healthy(),
      queues: [q('a', { ready: 1_700, drainRate: 20, readyTrend: -14 }), q('b')],
      rateLimits: smtp,
      thresholds: { ...healthy().thresholds, backlogMax: 10_000, drainEtaMaxMs: 1_800_000 },
    };
    expect(line(f, 'oldest-message')).toMatchObject({
      ok: true,
      detail:
        'no work queue holds an old message; a: 1700 ready, draining 20/s (SMTP rate limit 20/s), ETA 85 s, shrinking (within the 30 min drain bound)',
    });
  });

  it('fails a queue that is not shrinking, or whose ETA exceeds the drain bound', () => {
    const thresholds = { ...healthy().thresholds, backlogMax: 100_000, drainEtaMaxMs: 1_800_000 };
    const growing = {
      ...healthy(),
      thresholds,
      queues: [q('a', { ready: 1_700, drainRate: 20, readyTrend: 2 }), q('b')],
    };
    expect(line(growing, 'oldest-message')).toMatchObject({
      ok: false,
      detail: 'a: oldest ≈ 85 s (estimate: 1700 ready, draining 20/s, ETA 85 s)',
    });
    const long = {
      ...healthy(),
      thresholds,
      queues: [q('a', { ready: 50_000, drainRate: 20, readyTrend: -20 }), q('b')],
    };
    expect(line(long, 'oldest-message')).toMatchObject({
      ok: false,
      detail: 'a: oldest ≈ 42 min (estimate: 50000 ready, draining 20/s, ETA 42 min)',
    });
  });

  it('uses the measured head age of a classic queue as it is: no drain excuse', () => {
    const f = {
      ...healthy(),
      thresholds: { ...healthy().thresholds, drainEtaMaxMs: 1_800_000 },
      queues: [q('a', { ready: 10, drainRate: 20, readyTrend: -1, headTimestamp: now.getTime() / 1000 - 600 }), q('b')],
    };
    expect(line(f, 'oldest-message')).toMatchObject({ ok: false, detail: 'a: oldest 10 min' });
  });
});

describe("evaluateStatus: 'stale-leases' says what waits for a dead process", () => {
  const line = (f: StatusFacts) => evaluateStatus(f).checks.find((c) => c.name === 'stale-leases');

  it('names the count and until when, before any lease expired', () => {
    const f = { ...healthy(), deadHolderLeases: { count: 16, until: new Date('2026-12-01T12:02:00Z') } };
    expect(line(f)).toMatchObject({
      ok: false,
      value: 16,
      detail:
        '16 messages wait for leases of a dead process until 12:02 UTC (a live email-service takes each over at its next delivery)',
    });
  });

  it('lists both kinds, and passes when neither applies', () => {
    const both = {
      ...healthy(),
      stuck: { ...healthy().stuck, emailLeasesExpired: 2 },
      deadHolderLeases: { count: 1, until: new Date('2026-12-01T12:01:00Z') },
    };
    expect(line(both)?.detail).toBe(
      "1 messages wait for leases of a dead process until 12:01 UTC (a live email-service takes each over at its next delivery); 2 email deliveries in 'sending' with a lease expired and nobody taking over",
    );
    expect(line({ ...healthy(), deadHolderLeases: { count: 0, until: null } })).toMatchObject({ ok: true });
  });
});
