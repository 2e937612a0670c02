// npm start's view of the apps' logs (scripts/dev/start.mjs).
/**
 * How the apps' log lines are shown. On a terminal, readable: one line per entry with the time, the
 * level and the message (pino-pretty, a dependency installed by setup()), so a volunteer can scan
 * them; piped or redirected (or LOG_FORMAT=json), the apps' JSON as they wrote it, for tools. A line
 * that is not JSON (a crash trace) is shown as it is.
 */
export async function logFormat(terminal, env = process.env) {
  if (!terminal || env.LOG_FORMAT === 'json') return (line) => line;
  const { prettyFactory } = (await import('pino-pretty')).default;
  const pretty = prettyFactory({
    colorize: env.NO_COLOR === undefined,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,service',
  });
  return (line) => {
    if (!line.startsWith('{')) return line;
    try {
      return pretty(line).trimEnd();
    } catch {
      return line;
    }
  };
}
