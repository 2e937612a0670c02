/**
 * npm run demo:traffic -- --rate 200 --url http://127.0.0.1:3000 [--users 50] [--duration 60]
 *
 * Drives the demo community API with a realistic mix of actions (see traffic/generator.ts) and
 * prints what it did every 5 seconds. Ctrl-C stops it after the requests in flight finish.
 */
import pino from 'pino';
import { startTraffic } from './traffic/generator';

function parseArgs(argv: string[]): { rate: number; url: string; users: number; durationS: number } {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const [key, inline] = argv[i].split('=', 2);
    if (!key.startsWith('--')) throw new Error(`unexpected argument "${argv[i]}"`);
    args.set(key.slice(2), inline ?? argv[++i] ?? '');
  }
  for (const key of args.keys()) {
    if (!['rate', 'url', 'users', 'duration'].includes(key))
      throw new Error(`unknown option --${key} (known: --rate, --url, --users, --duration)`);
  }
  const num = (key: string, fallback: number) => {
    const raw = args.get(key);
    const value = raw === undefined ? fallback : Number(raw);
    if (!Number.isFinite(value) || value < 0) throw new Error(`--${key} must be a non-negative number, got "${raw}"`);
    return value;
  };
  return {
    rate: num('rate', 20),
    url: args.get('url') ?? 'http://127.0.0.1:3000',
    users: num('users', 20),
    durationS: num('duration', 0),
  };
}

async function main(): Promise<void> {
  const { rate, url, users, durationS } = parseArgs(process.argv.slice(2));
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'warn' });
  console.log(
    `traffic: ${rate} actions/s against ${url} with ${users} users${durationS ? ` for ${durationS} s` : ''} (Ctrl-C stops)`,
  );
  const traffic = startTraffic({
    baseUrl: url.replace(/\/$/, ''),
    rate,
    logger,
    users: Math.max(2, Math.floor(users)),
  });
  const started = Date.now();
  let previous = traffic.stats();
  const report = setInterval(() => {
    const s = traffic.stats();
    const rateNow = (s.sent - previous.sent) / 5;
    console.log(
      `traffic: ${rateNow.toFixed(0)} req/s; total ${s.sent} sent, ${s.ok} ok, ${s.failed} failed, ${s.skipped} skipped (too many in flight)`,
    );
    previous = s;
  }, 5000);

  const finish = async (why: string) => {
    clearInterval(report);
    console.log(`traffic: stopping (${why})`);
    await traffic.stop();
    const s = traffic.stats();
    console.log(
      `traffic: done after ${((Date.now() - started) / 1000).toFixed(0)} s: ${s.sent} sent, ${s.ok} ok, ${s.failed} failed`,
    );
    process.exit(s.failed > 0 && s.ok === 0 ? 1 : 0);
  };
  process.once('SIGINT', () => void finish('SIGINT'));
  process.once('SIGTERM', () => void finish('SIGTERM'));
  if (durationS > 0) setTimeout(() => void finish('duration reached'), durationS * 1000);
}

main().catch((err) => {
  console.error(`traffic: ${(err as Error).message}`);
  process.exit(2);
});
