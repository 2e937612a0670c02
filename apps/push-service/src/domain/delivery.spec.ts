import { NOTIFICATION_TYPES } from '@community/contracts';
import { topicFor, TTL_SECONDS, URGENCY } from './delivery';

it('the topic is a function of the idempotency key: 32 characters of base64url', () => {
  const topic = topicFor('mention:c-1:ada');
  expect(topic).toMatch(/^[A-Za-z0-9_-]{32}$/);
  expect(topicFor('mention:c-1:ada')).toBe(topic);
  expect(topicFor('mention:c-1:bob')).not.toBe(topic);
});

it('every type has a TTL and an urgency; a security alert is high and lives longest', () => {
  for (const t of NOTIFICATION_TYPES) {
    expect(TTL_SECONDS[t]).toBeGreaterThan(0);
    expect(URGENCY[t]).toBeDefined();
  }
  expect(URGENCY.security_alert).toBe('high');
  expect(Math.max(...NOTIFICATION_TYPES.map((t) => TTL_SECONDS[t]))).toBe(TTL_SECONDS.security_alert);
});
