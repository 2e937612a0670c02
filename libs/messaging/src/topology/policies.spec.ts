import { reconcilePolicy } from './policies';

const wanted = {
  'dead-letter-exchange': 'dlx',
  'dead-letter-routing-key': 'svc.work',
  overflow: 'drop-head',
  'delivery-limit': 50,
  'max-length': 1000,
};

describe('reconcilePolicy', () => {
  it('keeps an operator’s tunables and repairs nothing on a safe policy', () => {
    const current = { ...wanted, 'delivery-limit': 80, 'max-length': 10 };
    expect(reconcilePolicy(current, wanted)).toEqual({
      definition: current,
      repaired: [],
      kept: ['delivery-limit', 'max-length'],
    });
  });

  it('upgrades what older versions wrote: reject-publish + at-least-once + delivery-limit 5', () => {
    const old = {
      'dead-letter-exchange': 'dlx',
      'dead-letter-routing-key': 'svc.work',
      'dead-letter-strategy': 'at-least-once',
      overflow: 'reject-publish',
      'delivery-limit': 5,
      'max-length': 1000,
    };
    const { definition, repaired } = reconcilePolicy(old, wanted);
    expect(definition).toEqual(wanted);
    expect(repaired.sort()).toEqual(['dead-letter-strategy', 'delivery-limit', 'overflow']);
  });

  it('restores a dead-letter exchange an operator removed, and the missing limits', () => {
    const { definition, repaired } = reconcilePolicy({ 'max-length': 5 }, wanted);
    expect(definition).toEqual({ ...wanted, 'max-length': 5 });
    expect(repaired.sort()).toEqual(['dead-letter-exchange', 'dead-letter-routing-key', 'delivery-limit', 'overflow']);
  });
});
