import { readinessState } from './readiness';

describe('readinessState', () => {
  it('is ready only when every registered check is true', () => {
    const state = readinessState();
    expect(state.isReady()).toBe(true);
    state.set('amqp', false);
    expect(state.isReady()).toBe(false);
    expect(state.checks()).toEqual({ accepting: true, amqp: false });
    state.set('amqp', true);
    expect(state.isReady()).toBe(true);
  });

  it('markShuttingDown flips readiness false at once and for good', () => {
    const state = readinessState({ amqp: true, database: true });
    expect(state.isReady()).toBe(true);

    state.markShuttingDown();
    expect(state.shuttingDown).toBe(true);
    expect(state.isReady()).toBe(false);
    expect(state.checks()).toEqual({ amqp: true, database: true, accepting: false });

    // A reconnect event arriving during the drain must not make the replica ready again.
    state.set('amqp', true);
    state.set('accepting', true);
    expect(state.isReady()).toBe(false);
  });

  it('checks() returns a snapshot, not live state', () => {
    const state = readinessState({ amqp: true });
    const snapshot = state.checks();
    state.set('amqp', false);
    expect(snapshot['amqp']).toBe(true);
  });
});
