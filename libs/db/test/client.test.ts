// createTestDatabase (libs/testing) + createPrisma (the prisma entry) / createPgPool against a migrated private database.
import { createTestDatabase, type TestDatabase } from '@community/testing';
import { createPgPool } from '../src/index';
import { createPrisma, Prisma, type PrismaClient } from '../src/prisma';

describe('@community/db', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;

  beforeAll(async () => {
    db = await createTestDatabase('db_client');
    prisma = createPrisma(db.url, { max: 2, applicationName: 'db-client-test' });
  });

  afterAll(async () => {
    await prisma?.$disconnect();
    await db?.drop();
  });

  it('gives each caller its own migrated database', async () => {
    const other = await createTestDatabase('db_client');
    try {
      expect(other.name).not.toBe(db.name);
      expect(other.name.startsWith('test_db_client_')).toBe(true);
      const pool = createPgPool(other.url);
      try {
        const { rows } = await pool.query("SELECT to_regclass('public.processed_events')::text AS t");
        expect(rows[0].t).toBe('processed_events');
        const { rows: migrations } = await pool.query(
          'SELECT count(*)::int AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL',
        );
        expect(migrations[0].n).toBeGreaterThan(0);
      } finally {
        await pool.end();
      }
    } finally {
      await other.drop();
      await other.drop(); // idempotent
    }
  });

  it('plans every statement afresh on pool connections (no generic plan cached on a small table)', async () => {
    const pool = createPgPool(db.url, { max: 1 });
    try {
      expect((await pool.query('SHOW plan_cache_mode')).rows[0].plan_cache_mode).toBe('force_custom_plan');
    } finally {
      await pool.end();
    }
  });

  it('inserts and reads a ProcessedEvent through Prisma', async () => {
    const row = await prisma.processedEvent.create({ data: { consumer: 'notification-service', eventId: 'evt-1' } });
    expect(row.processedAt).toBeInstanceOf(Date);

    const found = await prisma.processedEvent.findUnique({
      where: { consumer_eventId: { consumer: 'notification-service', eventId: 'evt-1' } },
    });
    expect(found).toEqual(row);

    // The primary key is what makes redelivery idempotent: a second insert is a unique violation (P2002).
    const duplicate = prisma.processedEvent.create({ data: { consumer: 'notification-service', eventId: 'evt-1' } });
    await expect(duplicate).rejects.toBeInstanceOf(Prisma.PrismaClientKnownRequestError);
    await expect(duplicate).rejects.toMatchObject({ code: 'P2002' });

    // Same event id, other consumer: independent inbox.
    await prisma.processedEvent.create({ data: { consumer: 'email-service', eventId: 'evt-1' } });
    expect(await prisma.processedEvent.count({ where: { eventId: 'evt-1' } })).toBe(2);
  });

  it('records a batch with raw SQL through createPgPool, skipping duplicates', async () => {
    const pool = createPgPool(db.url, { max: 1 });
    try {
      const ids = ['evt-1', 'evt-2', 'evt-3', 'evt-3'];
      const { rowCount } = await pool.query(
        `INSERT INTO processed_events (consumer, event_id)
         SELECT 'notification-service', id FROM unnest($1::text[]) AS id
         ON CONFLICT DO NOTHING`,
        [ids],
      );
      expect(rowCount).toBe(2); // evt-1 was already there, evt-3 appears twice
    } finally {
      await pool.end();
    }
    expect(await prisma.processedEvent.count({ where: { consumer: 'notification-service' } })).toBe(3);
  });
});
