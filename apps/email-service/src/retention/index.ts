import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createScheduler, type Scheduler } from '@community/db';
import type { EmailConfig } from '../config';
import { purgeEmailTables } from '../store/retention';
import { emailRetentionPolicy } from './policy';

export { CLOCK_MARGIN_MS, emailRetentionIssues, emailRetentionPolicy, sendHandlerTimeoutMs } from './policy';
export type { EmailRetentionPolicy } from './policy';
export { refuseExpiredEvents } from './refuse-expired';

export const EMAIL_RETENTION_JOB = 'email-retention:email-service';

export interface EmailRetentionDeps {
  pool: Pool;
  logger: Logger;
  registry: Registry;
  config: Pick<EmailConfig, 'EMAIL_RETENTION_DAYS' | 'RETENTION_INTERVAL_MS' | 'RETENTION_BATCH_SIZE' | 'SMTP_BREAKER_MAX_HOLD_MS' | 'EMAIL_LEASE_MS'>;
}

/**
 * The retention job email-service runs: finished ledger rows and closed digest windows past the
 * horizon. Every replica runs the scheduler; one at a time runs the job (docs/DATABASE.md,
 * "Scheduled jobs"). email-service keeps no inbox rows of its own: its ledger is its idempotency.
 * Call start() once the service runs and stop() before the pool ends.
 */
export function createEmailRetention(deps: EmailRetentionDeps): Scheduler {
  const { retentionMs } = emailRetentionPolicy(deps.config);
  return createScheduler({
    pool: deps.pool,
    logger: deps.logger.child({ component: 'retention' }),
    registry: deps.registry,
    jobs: [
      {
        name: EMAIL_RETENTION_JOB,
        intervalMs: deps.config.RETENTION_INTERVAL_MS,
        run: ({ pool, signal }) => purgeEmailTables(pool, { olderThanMs: retentionMs, batchSize: deps.config.RETENTION_BATCH_SIZE, signal }),
      },
    ],
  });
}
