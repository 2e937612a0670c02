import { watchdogFindings } from './watchdog';
import type { QueueSample } from './facts';

const q = (name: string, messages: number, acked = 0, consumers = 1): QueueSample => ({
  name,
  messages,
  ready: messages,
  unacked: 0,
  consumers,
  acked,
  ackRate: 0,
  headTimestamp: null,
});

describe('watchdogFindings', () => {
  it('reports a work queue without consumer in the last two samples, not after one', () => {
    expect(watchdogFindings([[q('a', 3, 0, 0)]], ['a'], 3)).toEqual([]);
    expect(watchdogFindings([[q('a', 3, 0, 1)], [q('a', 3, 0, 0)]], ['a'], 3)).toEqual([]);
    expect(watchdogFindings([[q('a', 2, 0, 0)], [q('a', 3, 0, 0)]], ['a'], 3)).toEqual([
      { queue: 'a', kind: 'no_consumer', detail: 'a has no consumer (3 messages waiting)' },
    ]);
  });

  it('reports a queue that grew at each of the last n samples with no ack, and not one still acking', () => {
    const history = [
      [q('a', 1, 5), q('b', 1, 5)],
      [q('a', 2, 5), q('b', 2, 6)],
      [q('a', 4, 5), q('b', 3, 7)],
    ];
    expect(watchdogFindings(history, ['a', 'b'], 3)).toEqual([
      { queue: 'a', kind: 'stalled', detail: 'a grew from 1 to 4 messages over 3 samples with no ack' },
    ]);
  });

  it('needs n samples, and growth at every one of them', () => {
    expect(watchdogFindings([[q('a', 1)], [q('a', 2)]], ['a'], 3)).toEqual([]);
    expect(watchdogFindings([[q('a', 1)], [q('a', 3)], [q('a', 3)]], ['a'], 3)).toEqual([]);
  });

  it('reports a DLQ that keeps growing under its work queue name + .dlq', () => {
    const history = [
      [q('a', 0, 1), q('a.dlq', 1)],
      [q('a', 0, 2), q('a.dlq', 2)],
      [q('a', 0, 3), q('a.dlq', 3)],
    ];
    expect(watchdogFindings(history, ['a'], 3)).toEqual([
      { queue: 'a.dlq', kind: 'dlq_growing', detail: 'a.dlq grew from 1 to 3 messages over 3 samples' },
    ]);
  });

  it('ignores queues outside the topology (retry tiers, other tools) and returns nothing without samples', () => {
    expect(watchdogFindings([[q('other', 1, 0, 0)], [q('other', 1, 0, 0)]], ['a'], 1)).toEqual([]);
    expect(watchdogFindings([], ['a'], 1)).toEqual([]);
  });
});
