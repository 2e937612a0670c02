import type { Channel, ConsumeMessage } from 'amqplib';

/**
 * Acks for one channel, coalesced. Instead of one `basic.ack` frame (and socket write, and quorum
 * queue settle command) per message, acks decided in the same turn of the event loop are sent
 * together on the next `setImmediate`: one `ack(multiple=true)` covering every delivery tag below
 * the oldest delivery still undecided, and single acks for the rest (a slow message must not hold
 * back the acks of faster ones behind it, or the prefetch window would fill with finished work).
 *
 * `multiple=true` acknowledges every *outstanding* delivery up to the tag, so it is only used up
 * to the oldest delivery that has not been decided yet; nacks (requeue) bypass the buffer and go
 * out at once, and a nacked tag is no longer outstanding at the broker.
 */
export class Acker {
  /** Delivered on this channel, not yet decided (ack or nack). */
  private readonly undecided = new Set<number>();
  private pending: ConsumeMessage[] = [];
  private scheduled = false;

  constructor(private readonly channel: Channel) {}

  received(msg: ConsumeMessage): void {
    this.undecided.add(msg.fields.deliveryTag);
  }

  ack(msg: ConsumeMessage): void {
    this.undecided.delete(msg.fields.deliveryTag);
    this.pending.push(msg);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Requeue now. Throws if the channel is closed (the broker requeues by itself then). */
  requeue(msg: ConsumeMessage): void {
    this.undecided.delete(msg.fields.deliveryTag);
    this.channel.nack(msg, false, true);
  }

  /** Sends every buffered ack. A closed channel drops them: the broker already requeued those messages. */
  flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    let oldestUndecided = Infinity;
    for (const tag of this.undecided) if (tag < oldestUndecided) oldestUndecided = tag;
    let cover: ConsumeMessage | undefined;
    const singles: ConsumeMessage[] = [];
    for (const msg of batch) {
      if (msg.fields.deliveryTag < oldestUndecided) {
        if (!cover || msg.fields.deliveryTag > cover.fields.deliveryTag) cover = msg;
      } else singles.push(msg);
    }
    try {
      if (cover) this.channel.ack(cover, true);
      for (const msg of singles) this.channel.ack(msg);
    } catch {
      // channel closed: see the class comment
    }
  }
}
