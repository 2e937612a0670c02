import { brokerUserOf, ForbiddenPublisherError, ProducerPolicy } from './identity';
import { classify } from './errors';

describe('brokerUserOf', () => {
  it('is the AMQP URL’s user, decoded, or guest without one', () => {
    expect(brokerUserOf('amqp://notification-service:pw@rabbit:5672/community')).toBe('notification-service');
    expect(brokerUserOf('amqp://t1%2Bx:pw@rabbit/v')).toBe('t1+x');
    expect(brokerUserOf('amqp://127.0.0.1:5672')).toBe('guest');
  });
});

describe('ProducerPolicy', () => {
  const producers = { 'user.mentioned': ['community-api'], 'notification.created': ['notification-service'] };
  const refused = (policy: ProducerPolicy, type: string, user: unknown) => {
    try {
      policy.check(type, user);
      return undefined;
    } catch (err) {
      return err as Error;
    }
  };

  it('accepts a type from its producer’s user, its own user (retry copies) and a replayer’s; refuses anyone else, permanently', () => {
    const policy = new ProducerPolicy(producers, ['reconciler'], 'email-service', 'email-service');
    expect(refused(policy, 'user.mentioned', 'community-api')).toBeUndefined();
    expect(refused(policy, 'user.mentioned', 'email-service')).toBeUndefined();
    expect(refused(policy, 'user.mentioned', 'reconciler')).toBeUndefined();
    const err = refused(policy, 'user.mentioned', 'notification-service');
    expect(err).toBeInstanceOf(ForbiddenPublisherError);
    expect(err?.message).toBe(
      "user.mentioned published by broker user 'notification-service', which may not publish it (may: community-api)",
    );
    expect(classify(err, [])).toBe('permanent');
    expect(refused(policy, 'feed.unknown', 'community-api')?.message).toContain('(may: none declared)');
  });

  it('refuses a missing user-id unless the transition setting accepts it', () => {
    expect(refused(new ProducerPolicy(producers, [], 'a', 'a'), 'user.mentioned', undefined)?.message).toContain(
      'has no user-id',
    );
    expect(
      refused(new ProducerPolicy(producers, [], 'a', 'a', { missingUserId: 'accept' }), 'user.mentioned', undefined),
    ).toBeUndefined();
  });

  it('maps services to users: the own user’s prefix by default (a test vhost’s users), or the deployment’s map', () => {
    const prefixed = new ProducerPolicy(producers, [], 't1-notification-service', 'notification-service');
    expect(refused(prefixed, 'user.mentioned', 't1-community-api')).toBeUndefined();
    expect(refused(prefixed, 'user.mentioned', 'community-api')).toBeInstanceOf(ForbiddenPublisherError);
    const mapped = new ProducerPolicy(producers, [], 'guest', 'notification-service', {
      brokerUsers: { 'community-api': ['api-old', 'api-new'] },
    });
    expect(refused(mapped, 'user.mentioned', 'api-new')).toBeUndefined();
    expect(refused(mapped, 'user.mentioned', 'api-old')).toBeUndefined();
    expect(refused(mapped, 'user.mentioned', 'community-api')).toBeInstanceOf(ForbiddenPublisherError);
  });
});
