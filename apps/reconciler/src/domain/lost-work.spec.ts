import { evaluateLostWork, heldBy, lostFrom, type DueWork } from './lost-work';
import { evaluateStatus, type StatusFacts } from './status';
import type { QueueSample } from './facts';

const q = (name: string, ready = 0, unacked = 0): QueueSample => ({
  name,
  messages: ready + unacked,
  ready,
  unacked,
  consumers: 1,
  acked: 0,
  ackRate: 0,
  headTimestamp: null,
});
const due = (kind: DueWork['kind'], queue: string, rows: number): DueWork => ({
  kind,
  queue,
  rows,
  oldest: rows ? '2026-12-02T05:00:00.000Z' : null,
});
const grace = { graceMs: 120_000 };

describe('evaluateLostWork', () => {
  it('is ok when nothing is due', () => {
    const v = evaluateLostWork([due('email', 'email-service.send', 0)], [q('email-service.send')], grace);
    expect(v).toEqual({ ok: true, queues: [], detail: 'every due row has its message in a queue' });
  });

  it('is ok while the queue holds at least as many messages as there are due rows (they may be those rows)', () => {
    const v = evaluateLostWork(
      [due('email', 'email-service.send', 40), due('digest', 'email-service.send', 60)],
      [q('email-service.send', 90, 10)],
      grace,
    );
    expect(v.ok).toBe(true);
    expect(v.queues).toEqual([expect.objectContaining({ queue: 'email-service.send', due: 100, held: 100, lost: 0 })]);
  });

  it('after a purge: names the queue, each kind, how many are at least lost, and the re-drive', () => {
    const v = evaluateLostWork(
      [
        due('email', 'email-service.send', 3_695),
        due('digest', 'email-service.send', 5_216),
        due('email-lease', 'email-service.send', 13),
        due('event', 'notification-service.critical', 0),
      ],
      [q('email-service.send', 12, 0), q('notification-service.critical')],
      grace,
    );
    expect(v.ok).toBe(false);
    expect(v.queues).toEqual([
      expect.objectContaining({ queue: 'email-service.send', due: 8_924, held: 12, lost: 8_912 }),
    ]);
    expect(v.detail).toContain(
      'email-service.send: 3,695 immediate emails without their ledger row, 5,216 digest items not collected, 13 deliveries stuck',
    );
    expect(v.detail).toContain('the queue holds 12 messages: at least 8,912 lost');
    expect(v.detail).toContain(
      're-drive: npm run ops -- email redrive --since 2026-12-02T05:00:00.000Z, npm run ops -- digest redrive --since 2026-12-02T05:00:00.000Z, npm run ops -- email-lease redrive',
    );
  });

  it("counts the queue's retry tiers, its DLQ and the critical lane as holding its work, and no other queue", () => {
    const sample = [
      q('email-service.send', 1),
      q('email-service.send.retry.30000', 2),
      q('email-service.send.dlq', 3),
      q('email-service.send-critical', 4, 1),
      q('email-service.users', 100),
      q('email-service.send-critical.retry.1000', 5),
    ];
    expect(heldBy('email-service.send', sample)).toBe(16);
    expect(
      heldBy('notification-service.standard', [
        q('notification-service.standard', 1),
        q('notification-service.critical', 50),
      ]),
    ).toBe(1);
    expect(evaluateLostWork([due('email', 'email-service.send', 17)], sample, grace).queues[0].lost).toBe(1);
  });

  it('says it cannot tell when the management API does not answer', () => {
    const v = evaluateLostWork(
      [due('fanout-chunk', 'feed-service.fanout', 2)],
      { error: 'connect ECONNREFUSED' },
      grace,
    );
    expect(v.ok).toBe(false);
    expect(v.detail).toBe('cannot compare 2 due rows with the queues: RabbitMQ management API: connect ECONNREFUSED');
  });

  it('lostFrom finds a losing queue only', () => {
    const v = evaluateLostWork(
      [due('email', 'email-service.send', 5), due('event', 'notification-service.standard', 1)],
      [q('email-service.send'), q('notification-service.standard', 1)],
      grace,
    );
    expect(lostFrom(v, 'email-service.send')?.lost).toBe(5);
    expect(lostFrom(v, 'notification-service.standard')).toBeUndefined();
    expect(lostFrom(undefined, 'email-service.send')).toBeUndefined();
  });
});

describe("status line 'lost-work'", () => {
  const facts = (lostWork: StatusFacts['lostWork']): StatusFacts => ({
    now: new Date('2026-12-02T05:00:00Z'),
    startedAt: new Date('2026-12-02T04:00:00Z'),
    workQueues: [],
    queues: [],
    watchdog: [],
    stuck: { outboxUnsent: 0, outboxLagSeconds: 0, outboxProducers: [], emailLeasesExpired: 0, fanoutChunks: 0 },
    lastRecount: null,
    lastRuns: [],
    jobIntervalsMs: {},
    breakers: [],
    thresholds: { fanoutAfterMs: 600_000, backlogMax: 100, oldestMessageMaxMs: 60_000, outboxLagMaxMs: 60_000 },
    lostWork,
  });

  it('turns the status red naming the queue and its runbook section', () => {
    const s = evaluateStatus(
      facts(
        evaluateLostWork(
          [due('event', 'notification-service.critical', 7)],
          [q('notification-service.critical', 2)],
          grace,
        ),
      ),
    );
    const line = s.checks.find((c) => c.name === 'lost-work');
    expect(s.ok).toBe(false);
    expect(line).toEqual(expect.objectContaining({ ok: false, runbook: 'docs/RUNBOOK.md#check-lost-work', value: 5 }));
    expect(line?.detail).toMatch(
      /^notification-service\.critical: 7 events without their inbox row .* at least 5 lost/,
    );
  });

  it('is green when no row is lost', () => {
    const s = evaluateStatus(facts(evaluateLostWork([], [], grace)));
    expect(s.checks.find((c) => c.name === 'lost-work')).toEqual(
      expect.objectContaining({ ok: true, detail: 'every due row has its message in a queue' }),
    );
  });
});
