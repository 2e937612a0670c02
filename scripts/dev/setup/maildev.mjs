// MailDev (npm devDependency) as the local email sink: SMTP on SMTP_URL's port (1025),
// web UI and REST API on 1080, both bound to 127.0.0.1. Reused when it is already running.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { log, SetupError } from './log.mjs';
import { httpGet, redact, tcpAnswers, waitFor } from './net.mjs';
import { target } from './targets.mjs';

export const MAILDEV_WEB_PORT = 1080;

/**
 * Returns { webUrl, started } or null when SMTP_URL points elsewhere (then no MailDev is needed).
 * `supervisor` runs the child so it stops with everything else.
 */
export async function ensureMaildev(root, supervisor, env = process.env) {
  const smtp = target(env, 'SMTP_URL');
  if (!smtp.local) {
    log.info(`SMTP_URL points at ${redact(smtp.raw)}: not starting MailDev`);
    return null;
  }
  const webUrl = `http://127.0.0.1:${MAILDEV_WEB_PORT}`;
  const [smtpUp, webUp] = await Promise.all([
    tcpAnswers('127.0.0.1', smtp.port),
    tcpAnswers('127.0.0.1', MAILDEV_WEB_PORT),
  ]);
  if (smtpUp && webUp) {
    const api = (await httpGet(`${webUrl}/api/email`)) ?? { status: 0 };
    const v2 = api.status === 200 ? api : await httpGet(`${webUrl}/email`); // MailDev 2.x path
    if (v2?.status === 200 && Array.isArray(v2.body)) log.ok(`MailDev already running: reusing it (${webUrl})`);
    else
      log.warn(
        `ports ${smtp.port} and ${MAILDEV_WEB_PORT} answer but not like MailDev; using whatever listens there as the SMTP sink`,
      );
    return { webUrl, started: false };
  }
  if (smtpUp || webUp) {
    const busy = smtpUp ? `SMTP port ${smtp.port}` : `web port ${MAILDEV_WEB_PORT}`;
    throw new SetupError(
      `${busy} is taken by another program, so MailDev cannot start. Free it (e.g. \`ss -ltnp | grep ${smtpUp ? smtp.port : MAILDEV_WEB_PORT}\`).`,
    );
  }

  const bin = path.join(root, 'node_modules/.bin/maildev');
  if (!existsSync(bin))
    throw new SetupError('node_modules/.bin/maildev is missing; run npm ci (maildev is a devDependency).');
  log.step(`starting MailDev: SMTP 127.0.0.1:${smtp.port}, web UI ${webUrl}`);
  const entry = supervisor.spawn(
    'maildev',
    bin,
    ['--smtp', String(smtp.port), '--web', String(MAILDEV_WEB_PORT), '--ip', '127.0.0.1', '--web-ip', '127.0.0.1'],
    // Its stdout is a line per email received and per web request (38,922 lines in twenty minutes of
    // demo traffic, most of npm start's output): the web UI shows the same. Errors still come through.
    { cwd: root, env, quiet: true },
  );
  await waitFor(
    async () => {
      if (!entry.alive) throw new SetupError('MailDev exited during start-up; see its output above.');
      return (await tcpAnswers('127.0.0.1', smtp.port)) && (await tcpAnswers('127.0.0.1', MAILDEV_WEB_PORT));
    },
    {
      timeoutMs: 30_000,
      intervalMs: 300,
      onTimeout: `MailDev did not open ports ${smtp.port}/${MAILDEV_WEB_PORT} within 30 s.`,
    },
  );
  log.ok(`MailDev running: ${webUrl}`);
  return { webUrl, started: true };
}
