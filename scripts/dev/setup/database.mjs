// Prisma client generation (offline) and migrations, through the package.json scripts
// (`npm run db:generate`, `npm run db:migrate`; the latter creates the database when missing).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { log, SetupError } from './log.mjs';
import { redact } from './net.mjs';
import { target } from './targets.mjs';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function npmRun(root, script, { quiet }) {
  const res = spawnSync(npm, ['run', '--silent', script], {
    cwd: root,
    env: process.env,
    encoding: 'utf8',
    stdio: quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit',
  });
  if (res.error) throw new SetupError(`could not run npm run ${script}: ${res.error.message}`);
  if (res.status !== 0) {
    const out = quiet ? `\n${`${res.stdout ?? ''}${res.stderr ?? ''}`.trim()}` : ' (see its output above)';
    throw new SetupError(`npm run ${script} failed (exit ${res.status})${out}`);
  }
}

export function ensureDatabase(root) {
  const hasSchema = ['prisma.config.ts', 'prisma/schema.prisma', 'prisma/schema'].some((p) =>
    existsSync(path.join(root, p)),
  );
  if (!hasSchema) {
    log.warn(
      'no Prisma schema in this checkout yet (prisma.config.ts / prisma/schema.prisma): skipping db:generate and db:migrate',
    );
    return;
  }
  log.step('generating the Prisma client: npm run db:generate');
  npmRun(root, 'db:generate', { quiet: true });
  log.ok('Prisma client generated');

  if (!existsSync(path.join(root, 'scripts/db/migrate.ts'))) {
    log.warn('scripts/db/migrate.ts is not in this checkout yet: skipping db:migrate');
    return;
  }
  log.step(
    `creating the database if missing and applying migrations: npm run db:migrate (${redact(target(process.env, 'DATABASE_URL').raw)})`,
  );
  npmRun(root, 'db:migrate', { quiet: false });
  log.ok('database migrated');
}
