// Run by e2e/any-folder.test.ts from a copy of the repository in a folder only root can read. It
// does, from there, what the suite does as other users: starts the fault suite's private RabbitMQ and
// Postgres (rabbitmq-server, rabbitmqctl, initdb, pg_ctl as their users) and reads exact queue depths
// with rabbitmqctl, on its private node and on the shared one. Prints one JSON line of what it read.
import amqplib from 'amqplib';
import pg from 'pg';
import { createTestVhost, eventually, rabbitmqctl } from '@community/testing';
import { queueDepths } from '../chaos/checks';
import { startPrivatePostgres, startPrivateRabbit } from '../chaos/private-deps';

async function publish(url: string, queue: string, n: number): Promise<void> {
  const conn = await amqplib.connect(url);
  try {
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    for (let i = 0; i < n; i++) ch.sendToQueue(queue, Buffer.from(String(i)), { persistent: true });
    await ch.waitForConfirms();
  } finally {
    await conn.close();
  }
}

/**
 * The whole queue listing (name → depth) once the probe's queue reads `n` (a quorum queue's count
 * follows its confirms within moments), else the last listing. The whole of it: the CLI's failure
 * showed as extra "queues" (`=ERROR`, `File`) beside the real ones.
 */
async function listingOnce(
  list: () => Promise<Map<string, number>>,
  queue: string,
  n: number,
): Promise<Record<string, number>> {
  let last = new Map<string, number>();
  await eventually(`${queue} at ${n}`, async () => (last = await list()).get(queue) === n, 60_000, 250).catch(
    () => undefined,
  );
  return Object.fromEntries(last);
}

async function main(): Promise<void> {
  const out: Record<string, unknown> = { cwd: process.cwd() };
  const rabbit = await startPrivateRabbit();
  try {
    await publish(rabbit.amqpUrl, 'probe.private', 3);
    out.privateQueues = await listingOnce(() => queueDepths(rabbit.ctl, '/'), 'probe.private', 3);
  } finally {
    await rabbit.stop();
  }
  const postgres = await startPrivatePostgres();
  try {
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    out.postgres = (await client.query<{ one: number }>('SELECT 1 AS one')).rows[0].one;
    await client.end();
  } finally {
    await postgres.stop();
  }
  // The shared broker through libs/testing's rabbitmqctl (on Debian its wrapper changes directory itself).
  const vhost = await createTestVhost('any-folder');
  try {
    await publish(vhost.url, 'probe.shared', 2);
    out.sharedQueues = await listingOnce(
      () => queueDepths((...args) => rabbitmqctl(...args), vhost.vhost),
      'probe.shared',
      2,
    );
  } finally {
    await vhost.delete();
  }
  console.log(JSON.stringify(out));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
