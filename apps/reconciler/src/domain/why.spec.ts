import { buildEvent } from '@community/contracts';
import { explain } from './why';
import type { WhyFacts } from './facts';

const mention = (actorId: string, mentionedUserId: string) =>
  buildEvent(
    'user.mentioned',
    { commentId: 'c1', postId: 'p1', actorId, mentionedUserId, excerpt: 'hi' },
    { producer: 'community-api', id: '00000000-0000-4000-8000-000000000001' },
  );
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
const sent = (payload: unknown) => ({
  eventId: '00000000-0000-4000-8000-000000000001',
  producer: 'community-api',
  payload,
  createdAt: 't0',
  sentAt: 't1',
});
const statuses = (r: ReturnType<typeof explain>) => Object.fromEntries(r.steps.map((s) => [s.step, s.status]));

describe('explain (why)', () => {
  it('delivered: every step ok', () => {
    const r = explain(
      { userId: 'ada', eventId: 'e' },
      empty({
        events: [sent(mention('bob', 'ada'))],
        inbox: [{ consumer: 'notification-service.critical', eventId: 'e', processedAt: 't2' }],
        items: [
          {
            id: 'n1',
            type: 'mention',
            idempotencyKey: 'mention:c1:ada',
            inApp: true,
            emailChannel: 'immediate',
            sourceEventId: 'e',
            createdAt: 't2',
            readAt: null,
          },
        ],
        created: [{ eventId: 'n1', idempotencyKey: 'mention:c1:ada', createdAt: 't2', withdrawnAt: null }],
        deliveries: [
          {
            idempotencyKey: 'mention:c1:ada',
            channel: 'immediate',
            state: 'sent',
            attempts: 1,
            lastError: null,
            smtpResponse: '250 OK',
            sentAt: 't4',
            provider: 'fallback',
            pinnedProvider: 'fallback',
          },
        ],
      }),
    );
    expect(Object.values(statuses(r)).every((s) => s === 'ok')).toBe(true);
    expect(r.verdict).toBe('delivered');
    // Which provider took it (docs/EMAIL.md "Two providers").
    expect(r.steps.find((s) => s.step === 'email.smtp')?.detail).toBe(
      'accepted by SMTP (the fallback provider) at t4: 250 OK',
    );
    // The row is the record of its notification.created: its id, and no published-at any more.
    expect(r.steps.find((s) => s.step === 'email.decision')?.detail).toBe(
      "immediate email; notification.created n1 emitted after its row's commit (created at t2)",
    );
  });

  it('self-action, and a user who is not a recipient at all, from the planning rule itself', () => {
    const self = explain({ userId: 'ada', eventId: 'e' }, empty({ events: [sent(mention('ada', 'ada'))] }));
    expect(self.verdict).toBe(
      'self-action: ada is the actor of this user.mentioned: nobody is notified of their own action',
    );
    const other = explain({ userId: 'carl', eventId: 'e' }, empty({ events: [sent(mention('bob', 'ada'))] }));
    expect(other.verdict).toBe('self-action: carl is not a recipient of this user.mentioned (recipients: ada)');
  });

  it('muted: in-app and email off for the type now; the recorded decision is shown beside it', () => {
    const r = explain(
      { userId: 'ada', eventId: 'e' },
      empty({
        events: [sent(mention('bob', 'ada'))],
        preferences: [{ type: 'mention', inApp: false, email: 'off' }],
        items: [
          {
            id: 'n1',
            type: 'mention',
            idempotencyKey: 'k',
            inApp: false,
            emailChannel: 'off',
            sourceEventId: 'e',
            createdAt: 't',
            readAt: null,
          },
        ],
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
      empty({
        events: [sent(bad)],
        dead: [
          {
            queue: 'notification-service.critical.dlq',
            messageId: 'e',
            cause: 'permanent: ContractError: bad',
            at: 't',
          },
        ],
      }),
    );
    expect(statuses(r)).toMatchObject({
      'event.validated': 'failed',
      'event.processed': 'failed',
      'dead-letter': 'failed',
    });
    expect(r.verdict).toMatch(/^event.validated: refused by the contract: /);
  });

  it('a failed send names the SMTP refusal; no address names the missing projection', () => {
    const base = {
      events: [sent(mention('bob', 'ada'))],
      inbox: [{ consumer: 'notification-service.critical', eventId: 'e', processedAt: 't' }],
      items: [
        {
          id: 'n1',
          type: 'mention',
          idempotencyKey: 'k',
          inApp: true,
          emailChannel: 'immediate',
          sourceEventId: 'e',
          createdAt: 't',
          readAt: null,
        },
      ],
    };
    const failed = explain(
      { userId: 'ada', eventId: 'e' },
      empty({
        ...base,
        deliveries: [
          {
            idempotencyKey: 'k',
            channel: 'immediate',
            state: 'failed',
            attempts: 3,
            lastError: '550 mailbox unavailable',
            smtpResponse: null,
            sentAt: null,
          },
        ],
      }),
    );
    expect(failed.verdict).toBe(
      'email.ledger: ledger immediate: failed after 3 attempt(s), last error: 550 mailbox unavailable',
    );
    const row = { idempotencyKey: 'k', channel: 'immediate', attempts: 0, smtpResponse: null, sentAt: null };
    const held = explain(
      { userId: 'ada', eventId: 'e' },
      empty({ ...base, deliveries: [{ ...row, state: 'pending', lastError: null, heldUntil: 't9' }] }),
    );
    expect(held.steps.find((s) => s.step === 'email.smtp')).toMatchObject({
      status: 'pending',
      detail: expect.stringMatching(/^held until t9 \(the user's quiet hours, or the delay before the read check\)/),
    });
    const readInApp = explain(
      { userId: 'ada', eventId: 'e' },
      empty({
        ...base,
        deliveries: [{ ...row, state: 'suppressed', lastError: 'read_in_app: the notification was read in the app' }],
      }),
    );
    expect(readInApp.steps.find((s) => s.step === 'email.smtp')).toMatchObject({
      status: 'skipped',
      detail: 'not sent: the user read it in the app while the email waited',
    });
    const noAddress = explain({ userId: 'ada', eventId: 'e' }, empty({ ...base, emailUser: false }));
    expect(noAddress.verdict).toMatch(/^email.ledger: email-service knows no address for ada/);
  });
});

describe('explain (why) of a notification whose email message was purged', () => {
  const facts = () =>
    empty({
      events: [sent(mention('bob', 'ada'))],
      inbox: [{ consumer: 'notification-service.critical', eventId: 'e', processedAt: 't2' }],
      items: [
        {
          id: 'n1',
          type: 'mention',
          idempotencyKey: 'mention:c1:ada',
          inApp: true,
          emailChannel: 'immediate',
          sourceEventId: 'e',
          createdAt: '2026-12-02T05:00:00.000Z',
          readAt: null,
        },
      ],
      created: [
        { eventId: 'n1', idempotencyKey: 'mention:c1:ada', createdAt: '2026-12-02T05:00:00.000Z', withdrawnAt: null },
      ],
    });
  const lost = { queue: 'email-service.send', due: 9_240, held: 12, lost: 9_228, kinds: [] };

  it('no longer says "queued" when the lost-work rule finds email-service.send lost messages: it names the re-drive', () => {
    const r = explain({ userId: 'ada', eventId: 'e' }, facts(), {
      emailQueue: lost,
      dueBefore: '2026-12-02T05:10:00.000Z',
    });
    expect(statuses(r)['email.ledger']).toBe('failed');
    expect(r.verdict).toContain('is not in email-service.send');
    expect(r.verdict).toContain('at least 9228 lost');
    expect(r.verdict).toContain('npm run ops -- email redrive --since 2026-12-02T05:00:00.000Z');
    expect(r.verdict).toContain(
      "its notification.created (emitted after its row's commit, created at 2026-12-02T05:00:00.000Z)",
    );
    expect(r.verdict).not.toContain('queued');
  });

  it('stays pending while the message is younger than the grace, or the rule finds no loss', () => {
    const young = explain({ userId: 'ada', eventId: 'e' }, facts(), {
      emailQueue: lost,
      dueBefore: '2026-12-02T05:00:00.000Z',
    });
    expect(statuses(young)['email.ledger']).toBe('pending');
    const noLoss = explain({ userId: 'ada', eventId: 'e' }, facts(), { dueBefore: '2026-12-02T05:10:00.000Z' });
    expect(statuses(noLoss)['email.ledger']).toBe('pending');
    expect(noLoss.steps.find((s) => s.step === 'email.ledger')?.detail).toContain('the lost-work check finds no loss');
  });

  it('a withdrawn notification is not due (nothing re-emits it): no loss named, and the decision says so', () => {
    const f = facts();
    f.created = [{ ...f.created[0], withdrawnAt: '2026-12-02T05:01:00.000Z' }];
    const r = explain({ userId: 'ada', eventId: 'e' }, f, { emailQueue: lost, dueBefore: '2026-12-02T05:10:00.000Z' });
    expect(r.verdict).toBe(
      'email.ledger: no ledger row: the notification was withdrawn at 2026-12-02T05:01:00.000Z: nothing to send any more',
    );
    expect(r.steps.find((s) => s.step === 'email.decision')?.detail).toBe(
      'immediate email; notification.created n1 withdrawn at 2026-12-02T05:01:00.000Z (not re-emitted any more)',
    );
  });
});
