import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import { classifyPgError } from '@community/db';
import { createMessaging, type ErrorClassifier, type Messaging, type Topology } from '@community/messaging';
import type { Logger } from '@community/observability';
import type { Registry } from 'prom-client';

/** The variables of commonConfig (libs/config) an app's messaging is set up from. */
export interface ServiceMessagingConfig {
  readonly AMQP_URL: string;
  readonly RABBITMQ_MANAGEMENT_URL: string;
  readonly AMQP_TOPOLOGY: 'declare-all' | 'own-queues';
  readonly AMQP_MISSING_USER_ID: 'refuse' | 'accept';
}

export interface ServiceMessagingOptions {
  /** The app's name: the connection's name in the management UI, the producer the topology checks. */
  service: string;
  /** The topology to declare and check; the community's (COMMUNITY_TOPOLOGY) when absent (tests pass their own). */
  topology?: Topology;
  logger: Logger;
  registry: Registry;
  /** The app's own error types, asked after Postgres's (every app handles messages against it). */
  classifiers?: readonly ErrorClassifier[];
}

/**
 * The messaging runtime as every app sets it up from its config: the broker and its management API,
 * who provisions the topology (AMQP_TOPOLOGY), what a publish without `user-id` means
 * (AMQP_MISSING_USER_ID), and Postgres's errors classified first. One place, so an app cannot set up
 * its broker differently by accident (docs/SERVICE-TEMPLATE.md).
 */
export function serviceMessaging(config: ServiceMessagingConfig, o: ServiceMessagingOptions): Messaging {
  return createMessaging({
    url: config.AMQP_URL,
    managementUrl: config.RABBITMQ_MANAGEMENT_URL || undefined,
    service: o.service,
    topology: o.topology ?? COMMUNITY_TOPOLOGY,
    logger: o.logger,
    registry: o.registry,
    classifiers: [classifyPgError, ...(o.classifiers ?? [])],
    provisioning: config.AMQP_TOPOLOGY,
    producerCheck: { missingUserId: config.AMQP_MISSING_USER_ID },
  });
}
