/** Names this service everywhere: logs, metrics, the AMQP connection, the outbox producer. */
export const SERVICE_NAME = 'notification-service';
