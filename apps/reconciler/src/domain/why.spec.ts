import { buildEvent } from '@community/contracts';
import type { WhyFacts } from '../store/why';
import { explain } from './why';

const mention = (actorId: string, mentionedUserId: string) =>
  buildEvent('user.mentioned', { commentId: 'c1', postId: 'p1', actorId, mentionedUserId, excerpt: 'hi' }, { producer: 'community-api', id: '00000000-0000-4000-8000-000000000001' });
const empty = (over: Partial<WhyFacts> = {}): WhyFacts => ({
  events: [],
  inbox: [],
  items: [],
  preferences: [],
  created: [],
  deliveries: [],
  digestItems: [],
  emailUser: true,
  suppressions: [],
  dead: [],
  dlqSource: 'the broker DLQs',
  ...over,
});
const sent = (payload: unknown) => ({ eventId: '00000000-0000-4000-8000-000000000001', producer: 'community-api', payload, createdAt: 't0', sentAt: 't1' });
const statuses = (r: ReturnType<typeof explain>) => Object.fromEntries(r.steps.map((s) => [s.step, s.status]));

describe('explain (why)', () => {
  it('delivered: every step ok', () => {
    const r = explain(
      { userId: 'ada', eventId: 'e' },
      empty({
        events: [sent(mention('bob', 'ada'))],
        inbox: [{ consumer: 'notification-service.critical', eventId: 'e', processedAt: 't2' }],
        items: [{ id: 'n1', type: 'mention', idempotencyKey: 'mention:c1:ada', inApp: true, emailChannel: 'immediate', sourceEventId: 'e', createdAt: 't2', readAt: null }],
        created: [{ eventId: 'e2', idempotencyKey: 'mention:c1:ada', sentAt: 't3' }],
        deliveries: [{ idempotencyKey: 'mention:c1:ada', channel: 'immediate', state: 'sent', attempts: 1, lastError: null, smtpResponse: '250 OK', sentAt: 't4' }],
      }),
    );
    expect(Object.values(statuses(r)).every((s) => s === 'ok')).toBe(true);
    expect(r.verdict).toBe('delivered');
  });

  it('self-action, and a user who is not a recipient at all, from the planning rule itself', () => {
    const self = explain({ userId: 'ada', eventId: 'e' }, empty({ events: [sent(mention('ada', 'ada'))] }));
    expect(self.verdict).toBe('self-action: ada is the actor of this user.mentioned: nobody is notified of their own action');
    const other = explain({ userId: 'carl', eventId: 'e' }, empty({ events: [sent(mention('bob', 'ada'))] }));
    expect(other.verdict).toBe('self-action: carl is not a recipient of this user.mentioned (recipients: ada)');
  });

  it('muted: in-app and email off for the type now; the recorded decision is shown beside it', () => {
    const r = explain(
      { userId: 'ada', eventId: 'e' },
      empty({
        events: [sent(mention('bob', 'ada'))],
        preferences: [{ type: 'mention', inApp: false, email: 'off' }],
        items: [{ id: 'n1', type: 'mention', idempotencyKey: 'k', inApp: false, emailChannel: 'off', sourceEventId: 'e', createdAt: 't', readAt: null }],
      }),
    );
    expect(r.steps.find((s) => s.step === 'preferences')).toEqual({
      step: 'preferences',
      status: 'skipped',
      detail: 'mention for ada now: in-app off, email off (muted). At ingest: in-app off, email off.',
    });
    expect(statuses(r)).toMatchObject({ 'in-app': 'skipped', 'email.decision': 'skipped' });
  });

  it('dead-lettered: the cause of the dead letter, and a contract refusal of the stored body', () => {
    const bad = { ...mention('bob', 'ada'), data: { commentId: 'c1' } };
    const r = explain(
      { userId: 'ada', eventId: 'e' },
      empty({ events: [sent(bad)], dead: [{ queue: 'notification-service.critical.dlq', messageId: 'e', cause: 'permanent: ContractError: bad', at: 't' }] }),
    );
    expect(statuses(r)).toMatchObject({ 'event.validated': 'failed', 'event.processed': 'failed', 'dead-letter': 'failed' });
    expect(r.verdict).toMatch(/^event.validated: refused by the contract: /);
  });

  it('a failed send names the SMTP refusal; no address names the missing projection', () => {
    const base = {
      events: [sent(mention('bob', 'ada'))],
      inbox: [{ consumer: 'notification-service.critical', eventId: 'e', processedAt: 't' }],
      items: [{ id: 'n1', type: 'mention', idempotencyKey: 'k', inApp: true, emailChannel: 'immediate', sourceEventId: 'e', createdAt: 't', readAt: null }],
    };
    const failed = explain({ userId: 'ada', eventId: 'e' }, empty({ ...base, deliveries: [{ idempotencyKey: 'k', channel: 'immediate', state: 'failed', attempts: 3, lastError: '550 mailbox unavailable', smtpResponse: null, sentAt: null }] }));
    expect(failed.verdict).toBe('email.ledger: ledger immediate: failed after 3 attempt(s), last error: 550 mailbox unavailable');
    const noAddress = explain({ userId: 'ada', eventId: 'e' }, empty({ ...base, emailUser: false }));
    expect(noAddress.verdict).toMatch(/^email.ledger: email-service knows no address for ada/);
  });
});
