import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Channel, ConsumeMessage } from 'amqplib';
import { Acker } from './acker';

function setup() {
  const frames: string[] = [];
  const channel = {
    ack: (msg: ConsumeMessage, multiple = false) =>
      frames.push(`ack ${msg.fields.deliveryTag}${multiple ? ' multiple' : ''}`),
    nack: (msg: ConsumeMessage, _all: boolean, requeue: boolean) =>
      frames.push(`nack ${msg.fields.deliveryTag}${requeue ? ' requeue' : ''}`),
  } as unknown as Channel;
  const acker = new Acker(channel);
  const msgs = new Map<number, ConsumeMessage>();
  const receive = (...tags: number[]) =>
    tags.forEach((tag) => {
      const msg = { fields: { deliveryTag: tag } } as ConsumeMessage;
      msgs.set(tag, msg);
      acker.received(msg);
    });
  const ack = (...tags: number[]) => tags.forEach((t) => acker.ack(msgs.get(t)!));
  return { frames, acker, receive, ack, msgs };
}

describe('Acker', () => {
  it('coalesces acks decided in one turn into one ack(multiple=true)', async () => {
    const { frames, receive, ack } = setup();
    receive(1, 2, 3);
    ack(2, 1, 3);
    expect(frames).toEqual([]); // nothing before the next turn
    await nextTurn();
    expect(frames).toEqual(['ack 3 multiple']);
  });

  it('covers only tags below the oldest undecided delivery; later ones go singly', async () => {
    const { frames, receive, ack } = setup();
    receive(1, 2, 3, 4, 5);
    ack(1, 2, 4, 5); // 3 is still running
    await nextTurn();
    expect(frames).toEqual(['ack 2 multiple', 'ack 4', 'ack 5']);
  });

  it('sends every ack singly when the oldest delivery is undecided (multiple would ack it too)', async () => {
    const { frames, receive, ack } = setup();
    receive(1, 2, 3);
    ack(2, 3);
    await nextTurn();
    expect(frames).toEqual(['ack 2', 'ack 3']);
  });

  it('treats a requeued tag as no longer outstanding: it neither blocks nor is covered', async () => {
    const { frames, acker, receive, ack, msgs } = setup();
    receive(1, 2, 3);
    acker.requeue(msgs.get(1)!); // at once, not buffered
    expect(frames).toEqual(['nack 1 requeue']);
    ack(2, 3);
    await nextTurn();
    expect(frames).toEqual(['nack 1 requeue', 'ack 3 multiple']);
  });

  it('lets a later flush cover tags up to a delivery that has been decided since', async () => {
    const { frames, receive, ack } = setup();
    receive(1, 2, 3);
    ack(2);
    await nextTurn();
    ack(1, 3);
    await nextTurn();
    expect(frames).toEqual(['ack 2', 'ack 3 multiple']);
  });

  it('drops buffered acks silently when the channel has closed (the broker requeued those messages)', async () => {
    const channel = {
      ack: () => {
        throw new Error('Channel closed');
      },
    } as unknown as Channel;
    const acker = new Acker(channel);
    const msg = { fields: { deliveryTag: 1 } } as ConsumeMessage;
    acker.received(msg);
    acker.ack(msg);
    expect(() => acker.flush()).not.toThrow();
  });
});
