import { createPgPool, isTransactionPooled, poolConfig, transactionPooler } from './pool';

describe('createPgPool', () => {
  it('logs a broken idle connection without the client pg-pool attaches to the error (its secretKey)', async () => {
    const warnings: unknown[] = [];
    const pool = createPgPool('postgresql://nobody@127.0.0.1:1/none', {
      logger: { warn: (obj: unknown) => warnings.push(obj) } as never,
    });
    const err = Object.assign(new Error('Connection terminated unexpectedly'), {
      code: 'ECONNRESET',
      client: { processID: 42, secretKey: 123456789 },
    });
    pool.emit('error', err, {} as never);
    expect(warnings).toEqual([
      { err: { type: 'Error', message: 'Connection terminated unexpectedly', code: 'ECONNRESET' } },
    ]);
    expect(JSON.stringify(warnings)).not.toContain('123456789');
    await pool.end();
  });
});

describe('pgbouncer=true (a transaction pooler in front, docs/DEPLOY.md "Connection budget")', () => {
  it('is taken off the URL, and such a pool sends no startup options', async () => {
    const url = 'postgresql://svc:pw@pgbouncer:6432/community?sslmode=require&pgbouncer=true';
    expect(transactionPooler(url)).toEqual({
      url: 'postgresql://svc:pw@pgbouncer:6432/community?sslmode=require',
      pooled: true,
    });
    expect(poolConfig(url)).toEqual({
      connectionString: 'postgresql://svc:pw@pgbouncer:6432/community?sslmode=require',
    });
    const pool = createPgPool(url);
    expect(isTransactionPooled(pool)).toBe(true);
    await pool.end();
  });

  it('leaves any other URL as it was, with plan_cache_mode in the startup options', async () => {
    for (const url of ['postgresql://svc@db:5432/community', 'postgresql://svc@db:5432/community?pgbouncer=false']) {
      expect(transactionPooler(url).pooled).toBe(false);
      expect(poolConfig(url).options).toBe('-c plan_cache_mode=force_custom_plan');
    }
    const pool = createPgPool('postgresql://svc@db:5432/community');
    expect(isTransactionPooled(pool)).toBe(false);
    await pool.end();
  });
});
