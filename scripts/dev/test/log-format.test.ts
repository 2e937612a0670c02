import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * npm start's log view (scripts/dev/setup/log-format.mjs): readable on a terminal, JSON otherwise.
 * Plain node ESM, which jest's CommonJS sandbox cannot import: driven from a node child, as npm start runs it.
 */
const MODULE = path.resolve(__dirname, '../setup/log-format.mjs');
const LINE = JSON.stringify({
  level: 'warn',
  time: '2026-12-02T07:00:00.000Z',
  service: 'email-service',
  pid: 1,
  hostname: 'h',
  queue: 'email-service.send',
  msg: 'SMTP circuit breaker opened',
});
const TRACE = '    at Object.<anonymous> (/x.js:1:1)';

async function formatted(terminal: boolean, env: Record<string, string>): Promise<string[]> {
  const script = `
    import { logFormat } from ${JSON.stringify(MODULE)};
    const format = await logFormat(${terminal}, ${JSON.stringify(env)});
    console.log(JSON.stringify([${JSON.stringify(LINE)}, ${JSON.stringify(TRACE)}].map(format)));
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: path.resolve(__dirname, '../../..'),
    timeout: 60_000,
  });
  return JSON.parse(stdout) as string[];
}

it('on a terminal: one readable line per entry (time, level, message, fields), without pid, hostname and service', async () => {
  const [line, trace] = await formatted(true, { NO_COLOR: '1' });
  expect(line).toMatch(/^\[\d\d:\d\d:\d\d\] WARN: SMTP circuit breaker opened \{"queue":"email-service\.send"\}$/);
  expect(trace).toBe(TRACE);
});

it('piped, or with LOG_FORMAT=json: the JSON as written', async () => {
  expect(await formatted(false, {})).toEqual([LINE, TRACE]);
  expect(await formatted(true, { LOG_FORMAT: 'json' })).toEqual([LINE, TRACE]);
});
