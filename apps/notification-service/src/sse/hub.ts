import type { ServerResponse } from 'node:http';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { createListenClient } from '@community/db';
import type { NotificationMetrics } from '../metrics';
import { inboxChangesSince } from '../store/inbox';
import { INBOX_CHANNEL } from '../store/ingest';

/**
 * Server-Sent Events for inboxes, correct across replicas.
 *
 * Every change of an inbox commits a Postgres NOTIFY on `notification_inbox` naming the user (see
 * notifyInboxes). Each replica keeps ONE LISTEN connection; on a notification it re-reads, for
 * every stream of that user it holds, what changed since the version that stream last sent. So
 * whichever replica committed the change, the replica holding the stream pushes it, and what it
 * pushes is read from the database, never from a message that could be lost.
 *
 * Events: `notification` (a new in-app notification, no id), `count` (`{ count, version }`,
 * id = the inbox version) and `reset` (more was missed than is replayed: reload the list). Only `count` carries an id, and it is written after the notifications it
 * covers: a client resuming with Last-Event-ID gets every notification created after that version.
 * A resume after a cut in the middle of a burst may repeat a notification (clients de-duplicate
 * by its id); it never skips one.
 *
 * Limits (docs/NOTIFICATIONS.md "Server-Sent Events"): a replica holds at most `maxStreams` streams, and at most
 * `maxStreamsPerUser` of one inbox (a browser opens one per tab; a script looping on connect would
 * otherwise hold a connection, a buffer and a LISTEN fan-out each, until the replica runs out).
 * Over either, the route answers before taking the response over (`admission`): 429 for the user's
 * limit, 503 for a full replica (another replica behind the load balancer may have room), both with
 * Retry-After. The per-user count is per replica: with R replicas a user holds at most R × the limit.
 *
 * A stream ends when the token that opened it expires (`expiresAt`): the last event is
 * `token-expired` (`{ reason, expiredAt }`), then the server closes the response, and the client
 * reconnects with a new token (and its Last-Event-ID, so it misses nothing). Without this, a stream
 * opened once would keep reading an inbox for as long as the connection lives.
 */
export interface InboxHubOptions {
  databaseUrl: string;
  pool: Pool;
  logger: Logger;
  metrics: NotificationMetrics;
  /** Comment lines at this interval keep proxies from closing idle streams. */
  heartbeatMs: number;
  /** At most this many notifications are replayed on resume (the newest). */
  backlogLimit?: number;
  /** A client whose unsent output grows past this is disconnected (it reconnects and resumes). */
  maxBufferedBytes?: number;
  /** Streams this replica holds at most (SSE_MAX_STREAMS). */
  maxStreams?: number;
  /** Streams of one inbox this replica holds at most (SSE_MAX_STREAMS_PER_USER). */
  maxStreamsPerUser?: number;
}

/** Why a stream is refused before it opens: the user's limit, or the replica's. */
export type StreamRefusal = { limit: 'user'; max: number } | { limit: 'replica'; max: number };

/** setTimeout's longest delay (2^31 - 1 ms, about 24.8 days); a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;

export interface InboxHub {
  /** Resolves after the first LISTEN attempt, listening or not; (re)connects on its own afterwards. */
  start(): Promise<void>;
  /** Ends every stream and the LISTEN connection. */
  stop(): Promise<void>;
  /** Ends every stream (clients reconnect elsewhere); the listener stays. */
  closeStreams(): void;
  /** Whether one more stream of `userId` may open now (undefined) or why not. */
  admission(userId: string): StreamRefusal | undefined;
  /**
   * Takes over `res` (already authorised, and admitted just before) and streams the user's inbox on
   * it until the client leaves, the replica stops, or `expiresAt` (ms since the epoch: the token's
   * expiry) passes: then a last `token-expired` event, and the stream ends.
   */
  open(userId: string, res: ServerResponse, lastEventId?: number, expiresAt?: number): void;
  isListening(): boolean;
}

interface Stream {
  userId: string;
  res: ServerResponse;
  /** Inbox version this stream has sent the state of; undefined until the first sync. */
  sentVersion?: number;
  /** The first pass always sends the state, even when nothing changed since Last-Event-ID. */
  synced: boolean;
  syncing: boolean;
  again: boolean;
  closed: boolean;
  /** Ends the stream when its token expires. */
  expiry?: NodeJS.Timeout;
}

export function createInboxHub(options: InboxHubOptions): InboxHub {
  const { pool, metrics } = options;
  const logger = options.logger.child({ component: 'sse' });
  const backlogLimit = options.backlogLimit ?? 100;
  const maxBuffered = options.maxBufferedBytes ?? 1024 * 1024;
  const maxStreams = options.maxStreams ?? 5000;
  const maxStreamsPerUser = options.maxStreamsPerUser ?? 5;
  const streams = new Map<string, Set<Stream>>();
  let openCount = 0;
  let heartbeat: NodeJS.Timeout | undefined;

  function write(s: Stream, event: string, data: unknown, id?: number): void {
    if (s.closed) return;
    const text = `event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
    s.res.write(text);
    metrics.sseEvents.inc({ event });
    if (s.res.writableLength > maxBuffered) {
      logger.warn(
        { userId: s.userId, buffered: s.res.writableLength },
        'SSE client too slow; disconnecting it (it will resume)',
      );
      s.res.destroy();
    }
  }

  async function sync(s: Stream): Promise<void> {
    if (s.syncing) {
      s.again = true; // coalesce: one more pass after the running one
      return;
    }
    s.syncing = true;
    try {
      do {
        s.again = false;
        const changes = await inboxChangesSince(pool, s.userId, s.sentVersion, backlogLimit);
        if (s.closed) return;
        if (s.synced && changes.version === s.sentVersion) continue;
        // Too much was missed to replay: say so, so the client reloads its list, then send the newest.
        if (changes.truncated)
          write(s, 'reset', {
            reason: `more than ${backlogLimit} notifications since the last event; reload the list`,
          });
        for (const item of changes.items) write(s, 'notification', item);
        // Withdrawn since the last event: the client drops them (after a reset it reloads anyway).
        if (!changes.truncated) for (const id of changes.withdrawn) write(s, 'withdrawn', { id });
        write(s, 'count', { count: changes.count, version: changes.version }, changes.version);
        s.sentVersion = changes.version;
        s.synced = true;
      } while (s.again && !s.closed);
    } catch (err) {
      // Ending the stream is the recovery: the client reconnects with Last-Event-ID and resumes.
      logger.warn({ err, userId: s.userId }, 'SSE sync failed; closing the stream');
      s.res.end();
    } finally {
      s.syncing = false;
    }
  }

  function onNotification(payload: string | undefined): void {
    let ids: unknown;
    try {
      ids = JSON.parse(payload ?? '[]');
    } catch {
      logger.warn({ payload }, 'ignoring a malformed inbox notification');
      return;
    }
    if (!Array.isArray(ids)) return;
    for (const id of ids) for (const s of streams.get(String(id)) ?? []) void sync(s);
  }

  // One LISTEN connection per replica, reconnected with backoff by libs/db.
  const listener = createListenClient({
    connectionString: options.databaseUrl,
    channels: [INBOX_CHANNEL],
    applicationName: 'notification-service-sse',
    logger,
    onNotification: (n) => onNotification(n.payload),
    onListening: () => {
      metrics.sseListenerConnected.set(1);
      // Whatever committed while nobody listened was not announced: re-read every open stream.
      for (const set of streams.values()) for (const s of set) void sync(s);
    },
    onLost: () => metrics.sseListenerConnected.set(0),
  });

  function close(s: Stream): void {
    if (s.closed) return;
    s.closed = true;
    clearTimeout(s.expiry);
    const set = streams.get(s.userId);
    set?.delete(s);
    if (set?.size === 0) streams.delete(s.userId);
    openCount--;
    metrics.sseConnections.dec();
  }

  /** At the token's expiry: say so (the last event), then end the stream; the client reconnects with a new token. */
  function armExpiry(s: Stream, expiresAt: number): void {
    const delay = expiresAt - Date.now();
    if (delay > MAX_TIMER_MS) {
      s.expiry = setTimeout(() => armExpiry(s, expiresAt), MAX_TIMER_MS);
      s.expiry.unref();
      return;
    }
    s.expiry = setTimeout(
      () => {
        if (s.closed) return;
        write(s, 'token-expired', {
          reason: 'the token this stream was opened with has expired; reconnect with a new token (and Last-Event-ID)',
          expiredAt: new Date(expiresAt).toISOString(),
        });
        close(s);
        s.res.end();
      },
      Math.max(0, delay),
    );
    s.expiry.unref();
  }

  function closeStreams(): void {
    for (const set of [...streams.values()]) {
      for (const s of [...set]) {
        close(s);
        s.res.end();
      }
    }
  }

  return {
    async start() {
      await listener.start();
      heartbeat = setInterval(() => {
        const line = `: heartbeat ${new Date().toISOString()}\n\n`;
        for (const set of streams.values()) for (const s of set) s.res.write(line);
      }, options.heartbeatMs);
      heartbeat.unref();
    },
    async stop() {
      clearInterval(heartbeat);
      closeStreams();
      await listener.stop();
      metrics.sseListenerConnected.set(0);
    },
    closeStreams,
    admission(userId) {
      if ((streams.get(userId)?.size ?? 0) >= maxStreamsPerUser) return { limit: 'user', max: maxStreamsPerUser };
      if (openCount >= maxStreams) return { limit: 'replica', max: maxStreams };
      return undefined;
    },
    open(userId, res, lastEventId, expiresAt) {
      const s: Stream = {
        userId,
        res,
        sentVersion: lastEventId,
        synced: false,
        syncing: false,
        again: false,
        closed: false,
      };
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        // nginx and similar proxies buffer responses unless told not to.
        'x-accel-buffering': 'no',
      });
      // Tells EventSource how long to wait before reconnecting.
      res.write('retry: 2000\n\n');
      res.on('close', () => close(s));
      let set = streams.get(userId);
      if (!set) streams.set(userId, (set = new Set()));
      set.add(s);
      openCount++;
      metrics.sseConnections.inc();
      if (expiresAt !== undefined) armExpiry(s, expiresAt);
      // Registered before the first read: a change committed meanwhile triggers another pass.
      void sync(s);
    },
    isListening: () => listener.isListening(),
  };
}
