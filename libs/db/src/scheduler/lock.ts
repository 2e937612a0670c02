import type { Pool, PoolClient } from 'pg';
import { checkOutGuarded } from '../pool';

/** The connection holding a job's lock died: another replica may already run the job. */
export class LeadershipLostError extends Error {
  override name = 'LeadershipLostError';
  constructor(cause: Error) {
    super(`the connection holding the job's lock failed (${cause.message}); another replica may take over`, { cause });
  }
}

/**
 * A job's lock: a SESSION-level advisory lock (`pg_try_advisory_lock`) on a connection checked out
 * of the pool for the whole run.
 *
 * Why session-level and not `pg_try_advisory_xact_lock`: a transaction-level lock lives only as long
 * as one transaction, so the whole job would have to run inside it. A retention job deletes in many
 * short transactions on purpose; one transaction held open for minutes would pin the xmin horizon and
 * keep VACUUM from reclaiming the very rows it deletes, and hold every row lock until the end. Here the
 * lock's connection stays idle (no transaction open) while the job works through other pool
 * connections.
 *
 * A session lock is released by Postgres when its connection ends, so a crashed process, a killed
 * pod or a terminated backend (pg_terminate_backend, a Postgres restart) never leaves it held.
 * The converse matters too: when this connection dies while the job runs, the lock is gone and
 * another replica may start the job, so `lost` is aborted and the job is told to stop.
 *
 * The client is guarded while checked out: pg emits 'error' on a client whose connection dies, even
 * between queries, and an unheard 'error' would crash the process (docs/DATABASE.md).
 */
export class JobLock {
  private readonly lostController = new AbortController();
  private broken: Error | undefined;
  private done = false;
  private readonly onError = (err: Error) => {
    this.broken ??= err;
    this.lostController.abort(new LeadershipLostError(err));
  };

  private constructor(private readonly key: string) {}

  private clientOrUndefined: PoolClient | undefined;

  get client(): PoolClient {
    if (!this.clientOrUndefined) throw new Error('JobLock used before its connection was checked out');
    return this.clientOrUndefined;
  }

  /** Aborted when the lock's connection fails while held. */
  get lost(): AbortSignal {
    return this.lostController.signal;
  }

  /** The lock, or undefined when another session holds it. Throws what the database throws. */
  static async tryAcquire(pool: Pool, key: string): Promise<JobLock | undefined> {
    const lock = new JobLock(key);
    // Guarded from the moment pg-pool hands the connection out (libs/db/src/pool.ts, checkOutGuarded).
    lock.clientOrUndefined = await checkOutGuarded(pool, lock.onError);
    try {
      const res = await lock.client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS locked', [
        key,
      ]);
      if (res.rows[0].locked) return lock;
      lock.giveBack();
      return undefined;
    } catch (err) {
      lock.broken ??= err as Error;
      lock.giveBack();
      throw err;
    }
  }

  /** Unlocks and returns the connection; a connection that failed is destroyed instead (ending its session ends the lock). Never throws. */
  async release(): Promise<void> {
    if (this.done) return;
    if (!this.broken) {
      try {
        const res = await this.client.query<{ unlocked: boolean }>(
          'SELECT pg_advisory_unlock($1::bigint) AS unlocked',
          [this.key],
        );
        // false would mean this session did not hold it: its state is not what we think, so drop it.
        if (!res.rows[0].unlocked) this.broken = new Error('advisory lock was not held at unlock');
      } catch (err) {
        this.broken ??= err as Error;
      }
    }
    this.giveBack();
  }

  /** Ends the connection now (a job that would not stop): Postgres releases the lock with the session. */
  destroy(reason: Error): void {
    this.broken ??= reason;
    this.giveBack();
  }

  private giveBack(): void {
    if (this.done) return;
    this.done = true;
    if (this.broken) {
      // The listener stays: a destroyed client may still report its end, and nobody else listens.
      this.client.release(this.broken);
    } else {
      this.client.removeListener('error', this.onError);
      this.client.release();
    }
  }
}
