// Console output for the dev scripts: one voice, optional colour, no dependencies.
const useColour = process.stdout.isTTY && !process.env.NO_COLOR && process.env.TERM !== 'dumb';

const paint = (code) => (text) => (useColour ? `\x1b[${code}m${text}\x1b[0m` : String(text));
export const c = {
  bold: paint('1'),
  dim: paint('2'),
  red: paint('31'),
  green: paint('32'),
  yellow: paint('33'),
  blue: paint('34'),
  magenta: paint('35'),
  cyan: paint('36'),
};

const TAG = c.dim('[dev]');
export const log = {
  step: (msg) => console.log(`${TAG} ${c.bold('›')} ${msg}`),
  info: (msg) => console.log(`${TAG}   ${msg}`),
  ok: (msg) => console.log(`${TAG} ${c.green('✔')} ${msg}`),
  warn: (msg) => console.warn(`${TAG} ${c.yellow('!')} ${msg}`),
  error: (msg) => console.error(`${TAG} ${c.red('✖')} ${msg}`),
};

/** An error whose message is meant for a human and needs no stack trace. */
export class SetupError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SetupError';
  }
}

/** Runs an async main; prints SetupError messages plainly and exits non-zero. */
export async function runMain(main) {
  try {
    const code = await main();
    if (typeof code === 'number') process.exitCode = code;
  } catch (err) {
    if (err instanceof SetupError) {
      log.error(err.message);
    } else {
      log.error(err?.stack ?? String(err));
    }
    process.exitCode = 1;
  }
}
