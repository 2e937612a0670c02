import { ContractError } from './errors';
import { validate, validateOrThrow } from './validate';
import { SAMPLES, envelope, omit } from './test-fixtures';

const mention = () => envelope('user.mentioned', SAMPLES['user.mentioned'].data);

function errorOf(raw: unknown): ContractError {
  const result = validate(raw);
  if (result.ok) throw new Error('expected a validation error');
  return result.error;
}

describe('validate: input forms', () => {
  it('accepts a Buffer, a string and an object alike', () => {
    const json = JSON.stringify(mention());
    for (const raw of [Buffer.from(json), json, mention()]) {
      const result = validate(raw);
      expect(result.ok).toBe(true);
      if (result.ok && result.event.type === 'user.mentioned') {
        // Narrowed by the discriminant: data is typed as user.mentioned data.
        expect(result.event.data.mentionedUserId).toBe('u1');
      }
    }
  });

  it.each([
    ['truncated JSON', '{"id":'],
    ['empty body', ''],
    ['a Buffer of garbage', Buffer.from('not json')],
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0x7d])],
  ])('reports %s as MALFORMED_JSON', (_label, raw) => {
    const error = errorOf(raw);
    expect(error).toBeInstanceOf(ContractError);
    expect(error.code).toBe('MALFORMED_JSON');
    expect(error.path).toBe('');
    expect(error.permanent).toBe(true);
  });

  it.each([
    ['null', 'null'],
    ['array', '[]'],
    ['number', 42],
  ])('rejects a %s body as not an object', (_l, raw) => {
    const error = errorOf(raw);
    expect(error.code).toBe('SCHEMA_VIOLATION');
    expect(error.message).toBe('Expected object');
  });
});

describe('validate: type and version', () => {
  it('rejects an unknown type with UNKNOWN_TYPE at /type', () => {
    const error = errorOf(envelope('user.teleported', {}));
    expect(error.code).toBe('UNKNOWN_TYPE');
    expect(error.path).toBe('/type');
    expect(error.message).toBe("/type: Unknown event type 'user.teleported'");
    expect(error.permanent).toBe(true);
  });

  it('rejects an unknown version with UNSUPPORTED_VERSION at /version', () => {
    const error = errorOf({ ...mention(), version: 2 });
    expect(error.code).toBe('UNSUPPORTED_VERSION');
    expect(error.path).toBe('/version');
    expect(error.reason).toBe("Unsupported version 2 of 'user.mentioned' (supported: 1)");
    expect(error.eventId).toBe(mention().id);
  });

  it.each([
    ['a missing type', { type: undefined }, '/type', 'Expected required property'],
    ['a numeric type', { type: 5 }, '/type', 'Expected string'],
    ['a missing version', { version: undefined }, '/version', 'Expected required property'],
    ['a string version', { version: '1' }, '/version', 'Expected integer'],
  ])('treats %s as a SCHEMA_VIOLATION', (_label, override, path, reason) => {
    const error = errorOf(JSON.parse(JSON.stringify({ ...mention(), ...override })));
    expect(error.code).toBe('SCHEMA_VIOLATION');
    expect(error.path).toBe(path);
    expect(error.reason).toBe(reason);
  });
});

describe('validate: envelope', () => {
  it.each(['id', 'occurredAt', 'producer', 'correlationId', 'data'])('requires %s', (field) => {
    expect(errorOf(omit(mention(), field)).message).toBe(`/${field}: Expected required property`);
  });

  it('rejects unknown envelope properties (strict envelope)', () => {
    const error = errorOf({ ...mention(), priority: 'high' });
    expect(error.message).toBe('/priority: Unexpected property');
  });

  it.each([
    ['id', 'not-a-uuid'],
    ['occurredAt', '29/11/2026'],
    ['occurredAt', '2026-11-29T10:00:00'], // no offset
    ['occurredAt', '2026-02-30T10:00:00.000Z'], // no such day
    ['producer', ''],
  ])('rejects a bad %s (%s)', (field, value) => {
    expect(errorOf({ ...mention(), [field]: value }).path).toBe(`/${field}`);
  });

  it.each([
    ['a NUL', 'a\u0000b'],
    ['an unpaired high surrogate', 'tail\ud800'],
    ['an unpaired low surrogate', '\udfffhead'],
  ])('rejects %s in a data string, from JSON text and from an object', (_label, excerpt) => {
    const event = { ...mention(), data: { ...SAMPLES['user.mentioned'].data, excerpt } };
    for (const raw of [JSON.stringify(event), Buffer.from(JSON.stringify(event)), event]) {
      const error = errorOf(raw);
      expect(error.code).toBe('SCHEMA_VIOLATION');
      expect(error.path).toBe('/data/excerpt');
      expect(error.permanent).toBe(true);
    }
  });

  it('finds a NUL under any depth without overflowing the stack (a permanent error, not a crash)', () => {
    const depth = 200_000;
    const text = JSON.stringify(mention()).replace(
      '"excerpt":',
      `"deep":${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)},"excerpt":`,
    );
    const error = errorOf(text);
    expect(error.code).toBe('SCHEMA_VIOLATION');
    expect(error.path.startsWith('/data/deep/0/0/0')).toBe(true);
    expect(error.path.length).toBeLessThan(300);
  });

  it('accepts escaped surrogate pairs (an emoji written as \\ud83d\\ude00)', () => {
    const event = { ...mention(), data: { ...SAMPLES['user.mentioned'].data, excerpt: 'smile \ud83d\ude00' } };
    const text = JSON.stringify(event).replace('\u{1F600}', '\\ud83d\\ude00');
    expect(text).toContain('\\ud83d');
    expect(validate(text).ok).toBe(true);
  });

  it('accepts a date-time with an offset and a leap day', () => {
    expect(validate({ ...mention(), occurredAt: '2028-02-29T17:00:00+07:00' }).ok).toBe(true);
  });

  it('accepts an IANA time zone on user.upserted and names the field of one that is not', () => {
    const user = (timezone: string) =>
      envelope('user.upserted', {
        ...SAMPLES['user.upserted'].data,
        timezone,
      } as (typeof SAMPLES)['user.upserted']['data']);
    expect(validate(user('Asia/Jakarta')).ok).toBe(true);
    expect(validate(user('UTC')).ok).toBe(true);
    expect(errorOf(user('Mars/Olympus_Mons')).path).toBe('/data/timezone');
    expect(errorOf(user('+07:00')).path).toBe('/data/timezone');
  });
});

describe('validateOrThrow', () => {
  it('returns the event', () => {
    expect(validateOrThrow(JSON.stringify(mention()))).toEqual(mention());
  });

  it('throws the ContractError', () => {
    expect(() => validateOrThrow('{')).toThrow(ContractError);
    try {
      validateOrThrow(envelope('nope', {}));
    } catch (err) {
      expect((err as ContractError).code).toBe('UNKNOWN_TYPE');
      expect((err as { permanent?: unknown }).permanent).toBe(true);
    }
    expect.assertions(3);
  });
});
