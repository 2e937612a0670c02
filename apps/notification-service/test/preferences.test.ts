import { randomUUID } from 'node:crypto';
import { DEFAULT_PREFERENCES } from '@community/contracts';
import { bearer, startHarness, type Harness } from './harness';

/** GET / PUT /v1/users/:userId/preferences: defaults, partial updates, validation with reasons. */
let h: Harness;
beforeAll(async () => {
  h = await startHarness('prefs', { amqp: false });
});
afterAll(async () => h.close());

const get = (user: string) => h.app.inject({ url: `/v1/users/${user}/preferences`, headers: bearer(h.token(user)) });
const put = (user: string, payload: unknown) =>
  h.app.inject({
    method: 'PUT',
    url: `/v1/users/${user}/preferences`,
    headers: { ...bearer(h.token(user)), 'content-type': 'application/json' },
    payload: JSON.stringify(payload),
  });

it('answers the contract defaults for a user who chose nothing', async () => {
  const res = await get(`u-${randomUUID()}`);
  expect(res.statusCode).toBe(200);
  expect(res.json()).toEqual({ preferences: DEFAULT_PREFERENCES, quietHours: null });
});

it('changes only the types and channels a PUT names, and keeps them', async () => {
  const user = `u-${randomUUID()}`;
  const first = await put(user, { preferences: { reaction: { email: 'off' }, follow: { inApp: false } } });
  expect(first.statusCode).toBe(200);
  const second = await put(user, { preferences: { reaction: { inApp: false } } });
  const expected = {
    ...DEFAULT_PREFERENCES,
    reaction: { inApp: false, email: 'off', push: false },
    follow: { inApp: false, email: 'digest', push: false },
  };
  expect(second.json()).toEqual({ preferences: expected, quietHours: null });
  expect((await get(user)).json()).toEqual({ preferences: expected, quietHours: null });
  expect((await get(`u-${randomUUID()}`)).json()).toEqual({ preferences: DEFAULT_PREFERENCES, quietHours: null });
});

it.each([
  [
    'an unknown type',
    { preferences: { poke: { email: 'off' } } },
    /unknown notification type 'poke' \(expected one of: mention, reply, comment, reaction, follow, security_alert\)/,
  ],
  [
    'an unknown channel',
    { preferences: { mention: { sms: true } } },
    /unknown channel 'sms' for type 'mention' \(expected one of: inApp, email, push\)/,
  ],
  [
    'a bad email value',
    { preferences: { mention: { email: 'weekly' } } },
    /preferences.mention.email must be one of: immediate, digest, off/,
  ],
  [
    'a non-boolean inApp',
    { preferences: { mention: { inApp: 'yes' } } },
    /preferences.mention.inApp must be a boolean/,
  ],
  ['a non-boolean push', { preferences: { mention: { push: 'on' } } }, /preferences.mention.push must be a boolean/],
  [
    'turning security alert pushes off',
    { preferences: { security_alert: { push: false } } },
    /security_alert cannot be changed: it is always delivered in-app, by immediate email and by push/,
  ],
  [
    'turning security alerts off',
    { preferences: { security_alert: { email: 'off' } } },
    /security_alert cannot be changed/,
  ],
  [
    'hiding security alerts in-app',
    { preferences: { security_alert: { inApp: false } } },
    /security_alert cannot be changed/,
  ],
  ['a stray top-level field', { preferences: {}, mention: {} }, /unknown field 'mention' in body/],
  ['not an object', ['mention'], /body must be a JSON object/],
])('refuses %s with 400 and the reason, changing nothing', async (_what, body, reason) => {
  const user = `u-${randomUUID()}`;
  const res = await put(user, body);
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({
    statusCode: 400,
    code: 'NS_INVALID_PREFERENCES',
    error: 'Bad Request',
    message: expect.stringMatching(reason),
  });
  expect((await get(user)).json()).toEqual({ preferences: DEFAULT_PREFERENCES, quietHours: null });
});

it('accepts security_alert with its fixed values (a client echoing GET back)', async () => {
  const user = `u-${randomUUID()}`;
  const everything = (await get(user)).json();
  const res = await put(user, {
    preferences: { ...everything.preferences, mention: { inApp: true, email: 'digest' } },
  });
  expect(res.statusCode).toBe(200);
  expect(res.json().preferences.mention).toEqual({ inApp: true, email: 'digest', push: true });
  expect(res.json().preferences.security_alert).toEqual({ inApp: true, email: 'immediate', push: true });
});

it('answers push per type (on for mention, reply, security alert; off for the digest-ish types), and keeps a change of it', async () => {
  const user = `u-${randomUUID()}`;
  const before = (await get(user)).json().preferences;
  expect(Object.fromEntries(Object.entries(before).map(([t, p]) => [t, (p as { push: boolean }).push]))).toEqual({
    mention: true,
    reply: true,
    comment: false,
    reaction: false,
    follow: false,
    security_alert: true,
  });
  const res = await put(user, { preferences: { mention: { push: false }, follow: { push: true } } });
  expect(res.statusCode).toBe(200);
  const expected = {
    ...DEFAULT_PREFERENCES,
    mention: { inApp: true, email: 'immediate', push: false },
    follow: { inApp: true, email: 'digest', push: true },
  };
  expect(res.json()).toEqual({ preferences: expected, quietHours: null });
  // A later change of another channel keeps the push choice.
  await put(user, { preferences: { mention: { email: 'digest' } } });
  expect((await get(user)).json().preferences.mention).toEqual({ inApp: true, email: 'digest', push: false });
  const { rows } = await h.pool.query(
    `SELECT type, push FROM notification_preferences WHERE user_id = $1 ORDER BY type`,
    [user],
  );
  expect(rows).toEqual([
    { type: 'follow', push: true },
    { type: 'mention', push: false },
  ]);
});

it("a row stored before the push channel (push NULL) answers the type's default push", async () => {
  const user = `u-${randomUUID()}`;
  await h.pool.query(
    `INSERT INTO notification_preferences (user_id, type, in_app, email) VALUES ($1, 'reply', false, 'digest'), ($1, 'reaction', true, 'off')`,
    [user],
  );
  const prefs = (await get(user)).json().preferences;
  expect(prefs.reply).toEqual({ inApp: false, email: 'digest', push: true });
  expect(prefs.reaction).toEqual({ inApp: true, email: 'off', push: false });
});

describe('quiet hours (docs/NOTIFICATIONS.md "Delivery timing")', () => {
  it('none by default; a PUT sets them, keeps them across preference changes, and null removes them', async () => {
    const user = `u-${randomUUID()}`;
    expect((await get(user)).json().quietHours).toBeNull();
    const set = await put(user, { quietHours: { start: '22:00', end: '07:00' } });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toEqual({ preferences: DEFAULT_PREFERENCES, quietHours: { start: '22:00', end: '07:00' } });
    // A change of channels only leaves them as they are, and both can change in one PUT.
    await put(user, { preferences: { follow: { email: 'off' } } });
    expect((await get(user)).json().quietHours).toEqual({ start: '22:00', end: '07:00' });
    const both = await put(user, {
      preferences: { reaction: { inApp: false } },
      quietHours: { start: '13:00', end: '14:30' },
    });
    expect(both.json().quietHours).toEqual({ start: '13:00', end: '14:30' });
    expect(both.json().preferences.reaction.inApp).toBe(false);
    const { rows } = await h.pool.query('SELECT quiet_start, quiet_end FROM notification_counters WHERE user_id = $1', [
      user,
    ]);
    expect(rows).toEqual([{ quiet_start: '13:00', quiet_end: '14:30' }]);
    const cleared = await put(user, { quietHours: null });
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json().quietHours).toBeNull();
    expect((await get(user)).json().quietHours).toBeNull();
  });

  it('setting them creates no notification and leaves the inbox empty at version 0', async () => {
    const user = `u-${randomUUID()}`;
    await put(user, { quietHours: { start: '22:00', end: '07:00' } });
    const count = await h.app.inject({
      url: `/v1/users/${user}/notifications/unread-count`,
      headers: bearer(h.token(user)),
    });
    expect(count.json()).toEqual({ count: 0, version: 0 });
  });

  it.each([
    ['start == end', { start: '08:00', end: '08:00' }, /quietHours.start and quietHours.end are both 08:00/],
    [
      'an hour without its leading zero',
      { start: '7:00', end: '08:00' },
      /quietHours.start must be a 24-hour local time "HH:MM"/,
    ],
    [
      '24:00',
      { start: '22:00', end: '24:00' },
      /quietHours.end must be a 24-hour local time "HH:MM" \(00:00 to 23:59\), got "24:00"/,
    ],
    ['a missing end', { start: '22:00' }, /quietHours.end must be .* got nothing/],
    ['a stray field', { start: '22:00', end: '07:00', timezone: 'UTC' }, /unknown field 'timezone' in quietHours/],
    ['a string', '22:00-07:00', /quietHours must be an object/],
  ])(
    'refuses %s with 400 NS_INVALID_PREFERENCES and the reason, changing nothing',
    async (_what, quietHours, reason) => {
      const user = `u-${randomUUID()}`;
      await put(user, { quietHours: { start: '01:00', end: '02:00' } });
      const res = await put(user, { preferences: { follow: { email: 'off' } }, quietHours });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'NS_INVALID_PREFERENCES', message: expect.stringMatching(reason) });
      expect((await get(user)).json()).toEqual({
        preferences: DEFAULT_PREFERENCES,
        quietHours: { start: '01:00', end: '02:00' },
      });
    },
  );

  it('a body with neither preferences nor quietHours is refused', async () => {
    const res = await put(`u-${randomUUID()}`, {});
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/'preferences' and\/or 'quietHours'/);
  });
});
