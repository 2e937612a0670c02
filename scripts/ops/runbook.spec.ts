import { readFileSync } from 'node:fs';
import path from 'node:path';
import { anchor } from './status';

/**
 * docs/RUNBOOK.md has a section for every alert (its runbook_url) and every `ops status` check
 * (their `runbook` field), and every in-page link points at a section that exists.
 */
const text = readFileSync(path.resolve(__dirname, '../../docs/RUNBOOK.md'), 'utf8');
const headings = [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1].trim());
const anchors = new Set(headings.map((h) => anchor(h).split('#')[1]));

const ALERTS = [
  'CommunityQueueBacklogHigh',
  'CommunityQueueMessageTooOld',
  'CommunityDlqGrowing',
  'CommunityQueueNoConsumers',
  'CommunityHandlerErrorsHigh',
  'CommunityRetryRateHigh',
  'CommunityOutboxLagHigh',
  'CommunityCounterDrift',
  'CommunityServiceDown',
  'CommunityUnroutableMessages',
  'CommunityConnectionChurnHigh',
  'RabbitmqMemoryAlarm',
  'RabbitmqDiskAlarm',
  'RabbitmqFileDescriptorsHigh',
  'CommunitySmtpBreakerOpen',
  'CommunityFanoutLagHigh',
  'CommunityJobNotRunning',
];
const CHECKS = ['backlog', 'oldest-message', 'dlq', 'consumers', 'stale-leases', 'counter-drift', 'outbox-lag', 'fanout-chunks', 'jobs', 'breakers', 'reconciler-status'];

describe('docs/RUNBOOK.md', () => {
  it.each(ALERTS)('has a section for the alert %s', (alert) => {
    expect(headings).toContain(alert);
    expect(anchors).toContain(alert.toLowerCase());
  });

  it.each(CHECKS)('has a section for the status check %s, at the anchor the checks name', (check) => {
    expect(headings).toContain(`check: ${check}`);
    expect(anchor(`check: ${check}`)).toBe(`docs/RUNBOOK.md#check-${check}`);
  });

  it('says what it means, how to confirm and what to do in each section', () => {
    const sections = text.split(/^## /m).slice(1).filter((s) => !s.startsWith('Your tools'));
    for (const s of sections) {
      const name = s.split('\n')[0];
      expect([name, /\*\*Means\.\*\*/.test(s)]).toEqual([name, true]);
      expect([name, /\*\*(Confirm|Confirm \/ Do)\.\*\*/.test(s)]).toEqual([name, true]);
      expect([name, /\*\*(Do|Confirm \/ Do)\.\*\*/.test(s)]).toEqual([name, true]);
    }
  });

  it('links only to sections that exist', () => {
    const links = [...text.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(20);
    expect(links.filter((l) => !anchors.has(l))).toEqual([]);
  });
});
