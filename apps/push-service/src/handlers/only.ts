import { ContractError, validateOrThrow, type EventOf, type EventType } from '@community/contracts';

/**
 * The validator of push-service.send: the contract's validation, and a valid event of another type
 * refused too (a binding mistake), both permanent, so the message is dead-lettered with its reason.
 */
export function only<T extends EventType>(...types: T[]) {
  return (body: Buffer): { [K in T]: EventOf<K> }[T] => {
    const event = validateOrThrow(body);
    if (!(types as EventType[]).includes(event.type)) {
      throw new ContractError(
        'UNKNOWN_TYPE',
        '/type',
        `unexpected event type '${event.type}' on this queue (expected '${types.join("' or '")}')`,
        { eventId: event.id, eventType: event.type },
      );
    }
    return event as { [K in T]: EventOf<K> }[T];
  };
}
