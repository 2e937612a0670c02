import { createPgPool } from './pool';

describe('createPgPool', () => {
  it('logs a broken idle connection without the client pg-pool attaches to the error (its secretKey)', async () => {
    const warnings: unknown[] = [];
    const pool = createPgPool('postgresql://nobody@127.0.0.1:1/none', { logger: { warn: (obj: unknown) => warnings.push(obj) } as never });
    const err = Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET', client: { processID: 42, secretKey: 123456789 } });
    pool.emit('error', err, {} as never);
    expect(warnings).toEqual([{ err: { type: 'Error', message: 'Connection terminated unexpectedly', code: 'ECONNRESET' } }]);
    expect(JSON.stringify(warnings)).not.toContain('123456789');
    await pool.end();
  });
});
