import { PermanentError } from './errors';
import { primaryAmqpUrl } from './urls';
import type { Topology } from './topology';

/**
 * Broker identity (docs/MESSAGING.md "Broker identity"): who published a message, as the broker
 * vouches for it, and the largest message a consumer reads.
 *
 * RabbitMQ validates the AMQP `user-id` property against the publishing connection's user and
 * refuses a mismatch (PRECONDITION_FAILED), so a message that carries `user-id` was published by
 * that user. The runtime sets it on every publish (its own connection's user) and a consumer
 * compares it with who may publish the message's type.
 */

/**
 * 1 MiB: the broker's `max_message_size` in infra/rabbitmq (rabbitmq.conf, the operator's
 * RabbitmqCluster) and the consumers' default limit. An event is a few hundred bytes; the largest
 * message of the system (a fan-out chunk, a DLQ copy with its error headers) a few kilobytes.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_048_576;

/** The user an AMQP URL (or the first of a list) connects as: its user info, or `guest` (amqplib's default) when it has none. */
export function brokerUserOf(url: string): string {
  try {
    const user = decodeURIComponent(new URL(primaryAmqpUrl(url)).username);
    return user === '' ? 'guest' : user;
  } catch {
    return 'guest';
  }
}

export interface ProducerCheckOptions {
  /**
   * The deployment's broker users per service (a service may have several during a credential
   * rotation). A service not named here connects as `<prefix><service>`, as
   * infra/rabbitmq/definitions.json and the operator's User resources name them, where the prefix
   * is whatever this process's own user has before its own service name (the definitions'
   * `userPrefix`: empty in the committed file, a test's own in a test vhost; empty too when the own
   * user is not named after the service, e.g. `guest` in development).
   */
  brokerUsers?: Readonly<Record<string, string | readonly string[]>>;
  /**
   * A message without `user-id`: `refuse` (default: nobody vouches for its publisher) or `accept`
   * (a transition, while producers outside this repository do not set it yet).
   */
  missingUserId?: 'refuse' | 'accept';
}

/** A message of a type its publisher may not publish, or without a publisher: dead-lettered, never retried. */
export class ForbiddenPublisherError extends PermanentError {
  override name = 'ForbiddenPublisherError';
  constructor(message: string) {
    super(message, 'FORBIDDEN_PUBLISHER');
  }
}

/** A body larger than the consumer's limit: dead-lettered before it is parsed. */
export class MessageTooLargeError extends PermanentError {
  override name = 'MessageTooLargeError';
  constructor(
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(`message body of ${bytes} bytes is larger than the limit of ${maxBytes} bytes`, 'MESSAGE_TOO_LARGE');
  }
}

/**
 * Who may publish each type, in broker users. Built from the topology's `producers` (type →
 * services) and `replayers`, the deployment's service → user map, and the consumer's own user,
 * which is always trusted: its retry copies come back with it, and in development every service
 * shares one user.
 */
export class ProducerPolicy {
  private readonly byType = new Map<string, Set<string>>();
  private readonly replayers: Set<string>;
  private readonly missing: 'refuse' | 'accept';

  constructor(
    producers: NonNullable<Topology['producers']>,
    replayers: readonly string[],
    private readonly ownUser: string,
    ownService: string,
    options: ProducerCheckOptions = {},
  ) {
    const prefix = ownUser.endsWith(ownService) ? ownUser.slice(0, -ownService.length) : '';
    const usersOf = (service: string): string[] => {
      const mapped = options.brokerUsers?.[service];
      return mapped === undefined ? [prefix + service] : typeof mapped === 'string' ? [mapped] : [...mapped];
    };
    for (const [type, services] of Object.entries(producers)) this.byType.set(type, new Set(services.flatMap(usersOf)));
    this.replayers = new Set(replayers.flatMap(usersOf));
    this.missing = options.missingUserId ?? 'refuse';
  }

  /** Throws ForbiddenPublisherError unless `userId` may publish `type`. */
  check(type: string, userId: unknown): void {
    if (userId === undefined || userId === null || userId === '') {
      if (this.missing === 'accept') return;
      throw new ForbiddenPublisherError(
        `${type} has no user-id: the publisher is unknown (producers must set user-id to their broker user)`,
      );
    }
    const user = String(userId);
    if (user === this.ownUser || this.replayers.has(user)) return;
    const allowed = this.byType.get(type);
    if (allowed?.has(user)) return;
    const who = allowed && allowed.size > 0 ? [...allowed].sort().join(', ') : 'none declared';
    throw new ForbiddenPublisherError(
      `${type} published by broker user '${user.slice(0, 100)}', which may not publish it (may: ${who})`,
    );
  }
}
