import { amqpUrls, connectionOrder, primaryAmqpUrl } from './urls';

describe('AMQP_URL as a list of nodes', () => {
  const a = 'amqp://u:p@rabbit-0:5672/community';
  const b = 'amqp://u:p@rabbit-1:5672/community';
  const c = 'amqp://u:p@rabbit-2:5672/community';

  it('splits on commas, trims, ignores empty parts, and refuses an empty list', () => {
    expect(amqpUrls(a)).toEqual([a]);
    expect(amqpUrls(` ${a} , ${b},,${c} `)).toEqual([a, b, c]);
    expect(() => amqpUrls(' , ')).toThrow('AMQP_URL names no broker');
    expect(primaryAmqpUrl(`${b},${a}`)).toBe(b);
  });

  it('tries the list from a random node on, wrapping around, so replicas spread over the nodes', () => {
    const list = `${a},${b},${c}`;
    expect(connectionOrder(list, () => 0)).toEqual([a, b, c]);
    expect(connectionOrder(list, () => 0.5)).toEqual([b, c, a]);
    expect(connectionOrder(list, () => 0.99)).toEqual([c, a, b]);
    expect(connectionOrder(a, () => 0.99)).toEqual([a]);
  });
});
