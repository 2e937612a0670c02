import { Worker } from 'node:worker_threads';
import { createLogger, type LoggerOptions } from './logger';
import { redactString } from './redact';

/**
 * Redacts `line` in a worker thread, ended if it has not finished by `deadlineMs`: a regex that
 * backtracks for hours blocks its thread, and on this one it would hang the run instead of failing.
 */
function redactsWithin(line: string, deadlineMs: number): Promise<'finished' | 'still running'> {
  const worker = new Worker(
    "const { parentPort, workerData } = require('node:worker_threads'); require(workerData.module).redactString(workerData.line); parentPort.postMessage('finished');",
    { eval: true, workerData: { line, module: require.resolve('./redact') }, execArgv: ['-r', '@swc-node/register'] },
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => void worker.terminate().then(() => resolve('still running')), deadlineMs);
    worker.once('message', () => (clearTimeout(timer), void worker.terminate(), resolve('finished')));
    worker.once('error', (err) => (clearTimeout(timer), reject(err)));
  });
}

// A real JWT shape (header.payload.signature), so the test exercises the actual pattern.
const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTEiLCJpYXQiOjE3MDAwMDAwMDB9.c2lnbmF0dXJlLXNpZ25hdHVyZQ';

function capture(options: Partial<LoggerOptions> = {}) {
  const raw: string[] = [];
  const logger = createLogger({
    service: 'test-service',
    destination: { write: (s: string) => raw.push(s) },
    ...options,
  });
  const lines = () => raw.map((s) => JSON.parse(s) as Record<string, unknown>);
  return { logger, raw, lines };
}

describe('redactString', () => {
  it.each([
    ['mail alice@example.com now', 'mail a***@example.com now'],
    ['two: bob.smith+x@mail.example.co.id, c@d.io', 'two: b***@mail.example.co.id, c***@d.io'],
    [`Authorization: Bearer ${JWT}`, 'Authorization: Bearer [REDACTED]'],
    ['bearer opaque-token_123.abc==', 'bearer [REDACTED]'],
    [`token in url /stream?access_token=${JWT}&x=1`, 'token in url /stream?access_token=[REDACTED]&x=1'],
    ['amqp://app:s3cret@rabbit:5672/vhost', 'amqp://app:***@rabbit:5672/vhost'],
    ['postgresql://postgres:pw@db.example.com:5432/x', 'postgresql://postgres:***@db.example.com:5432/x'],
    ['nothing to hide: amqp://guest@127.0.0.1:5672 user-1', 'nothing to hide: amqp://guest@127.0.0.1:5672 user-1'],
    ['GET /v1/users/alice.b%40example.com/follow', 'GET /v1/users/a***@example.com/follow'],
    // An address inside a query value, after percent-encoded separators, where the run of
    // local-part characters before the '@' is longer than a local part may be: masked from the first
    // start after a `%XX` that fits (more than the address: never less).
    [
      '/why?idempotencyKey=mention%3Ab11d5ab8-b063-4136-a35f-db53d667b3c6%3Aalice.longer.name.x%40example.com',
      '/why?idempotencyKey=mention%3Ab***@example.com',
    ],
    ['"url":"/v1/unsubscribe?token=eyJ2IjoxfQ.c2ln&x=1"', '"url":"/v1/unsubscribe?token=[REDACTED]&x=1"'],
    ['/cb?code=1&API_KEY=k-123#frag', '/cb?code=1&API_KEY=[REDACTED]#frag'],
    ['no query: token=abc limit=5', 'no query: token=abc limit=5'],
  ])('%j → %j', (input, expected) => {
    expect(redactString(input)).toBe(expected);
  });

  // Lines of 2 MB: a linear pass takes milliseconds, quadratic backtracking (~10^12 steps) hours,
  // so the deadline is generous for the one and hopeless for the other, however loaded the machine.
  it.each([
    ['a long local-part run, then an @', `${'a'.repeat(2_000_000)}! @`],
    ['JWT-like prefixes', `${'eyJ-'.repeat(500_000)}.`],
    ['URL-like prefixes', `${'//a:b'.repeat(500_000)}`],
    ['bearer prefixes', `${'Bearer '.repeat(500_000)}`],
    ['encoded @ runs', `${'a%40'.repeat(500_000)}`],
    ['query-secret prefixes', `${'?token='.repeat(500_000)}`],
  ])(
    'stays fast on a pathological line: %s (no quadratic backtracking)',
    async (_name, line) => {
      expect(await redactsWithin(line, 20_000)).toBe('finished');
    },
    30_000,
  );
});

describe('createLogger', () => {
  it('writes JSON with service, ISO time and level name', () => {
    const { logger, lines } = capture();
    logger.info('hello');
    const [line] = lines();
    expect(line).toMatchObject({ service: 'test-service', level: 'info', msg: 'hello' });
    expect(line['time']).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('removes values under secret keys', () => {
    const { logger, lines } = capture();
    logger.info(
      {
        email: 'alice@example.com',
        user: { email: 'bob@example.com', password: 'pw', id: 'user-1' },
        smtp: { smtpPassword: 'x' },
        req: { headers: { authorization: `Bearer ${JWT}`, host: 'h' } },
      },
      'user upserted',
    );
    const [line] = lines();
    expect(line['email']).toBe('[REDACTED]');
    expect(line['user']).toEqual({ email: '[REDACTED]', password: '[REDACTED]', id: 'user-1' });
    expect(line['smtp']).toEqual({ smtpPassword: '[REDACTED]' });
    expect(line['req']).toEqual({ headers: { authorization: '[REDACTED]', host: 'h' } });
  });

  it('masks emails and tokens inside messages, interpolations, nested strings, bindings and errors', () => {
    const { logger, raw, lines } = capture();
    const child = logger.child({ recipient: 'carol@example.com' });
    child.warn(
      { detail: { note: `sent to dave@example.org with Bearer ${JWT}` }, list: ['erin@example.net'] },
      'delivery to %s failed',
      'frank@example.com',
    );
    child.error(new Error(`SMTP 550 for grace@example.com token=${JWT}`), 'send failed');

    const output = raw.join('');
    for (const secret of ['carol@', 'dave@', 'erin@', 'frank@', 'grace@', JWT]) {
      expect(output).not.toContain(secret);
    }
    const [warn, error] = lines();
    expect(warn).toMatchObject({
      recipient: 'c***@example.com',
      msg: 'delivery to f***@example.com failed',
      detail: { note: 'sent to d***@example.org with Bearer [REDACTED]' },
      list: ['e***@example.net'],
    });
    expect((error['err'] as { message: string }).message).toBe('SMTP 550 for g***@example.com token=[REDACTED]');
  });

  it('respects the level', () => {
    const { logger, lines } = capture({ level: 'warn' });
    logger.info('hidden');
    logger.warn('shown');
    expect(lines().map((l) => l['msg'])).toEqual(['shown']);
  });
});
