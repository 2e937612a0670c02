import { anchor, composeStatus, renderStatus, type DlqPart } from './status';

const dlq = (pending: number): DlqPart => ({
  queues: [{ queue: 'a.dlq', pending, oldestAgeSeconds: pending ? 300 : null, inBroker: 0 }],
  totalPending: pending,
  topCauses: pending
    ? [
        {
          count: pending,
          errorClass: 'PermanentError',
          normalized: 'user <n> not found',
          handler: 'h',
          messageType: 't',
          queues: ['a.dlq'],
          fingerprint: 'f00',
        },
      ]
    : [],
  check: { name: 'dlq', ok: pending === 0, value: pending, threshold: 0, runbook: 'docs/RUNBOOK.md#check-dlq' },
});

describe('anchor', () => {
  it('spells sections as GitHub renders their headings', () => {
    expect(anchor('check: stale-leases')).toBe('docs/RUNBOOK.md#check-stale-leases');
    expect(anchor('CommunityDlqGrowing')).toBe('docs/RUNBOOK.md#communitydlqgrowing');
  });
});

describe('composeStatus / renderStatus', () => {
  it('passes when every check passes', () => {
    const r = composeStatus({ ok: true, checks: [{ name: 'backlog', ok: true, value: 3, threshold: 1000 }] }, dlq(0));
    expect(r.ok).toBe(true);
    expect(renderStatus(r)).toMatch(/^OK {4}backlog {5}3 \(threshold 1000\)\nOK {4}dlq .*\n\nAll checks pass\.$/);
  });

  it('names the runbook section on each failing line, and lists the top causes', () => {
    const r = composeStatus(
      {
        ok: false,
        checks: [
          { name: 'consumers', ok: false, value: 0, threshold: 1, detail: 'email-service.send has no consumer' },
        ],
      },
      dlq(4),
    );
    const text = renderStatus(r);
    expect(r.ok).toBe(false);
    expect(text).toContain(
      'FAIL  consumers   0 (threshold 1) — email-service.send has no consumer  → see docs/RUNBOOK.md#check-consumers',
    );
    expect(text).toContain(
      'FAIL  dlq         4 (threshold 0) — a.dlq 4 (oldest 5 min)  → see docs/RUNBOOK.md#check-dlq',
    );
    expect(text).toContain('4× PermanentError: user <n> not found');
  });

  it('shows structured values through their detail only', () => {
    const r = composeStatus(
      {
        checks: [
          {
            name: 'jobs',
            ok: true,
            value: [{ job: 'a' }],
            threshold: 'each job ran',
            detail: 'every job runs on schedule',
          },
        ],
      },
      dlq(0),
    );
    expect(renderStatus(r)).toContain('OK    jobs        (threshold each job ran) — every job runs on schedule');
  });

  it('fails when a part cannot be read', () => {
    const r = composeStatus(new Error('no such route'), dlq(0));
    expect(r.ok).toBe(false);
    expect(renderStatus(r)).toContain(
      'FAIL  reconciler-status — no such route  → see docs/RUNBOOK.md#check-reconciler-status',
    );
  });
});
