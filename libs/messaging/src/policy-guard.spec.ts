import { policyInForce, winningPolicies } from './policy-guard';

const policy = (pattern: string, priority: number, definition: Record<string, unknown>, applyTo = 'queues') => ({
  pattern,
  priority,
  definition,
  'apply-to': applyTo,
});
const safe = { 'dead-letter-exchange': 'dlx', 'delivery-limit': 50 };

describe('policyInForce', () => {
  it('needs a dead-letter exchange and a delivery limit', () => {
    expect(policyInForce(safe)).toBe(true);
    expect(policyInForce({ 'delivery-limit': 50 })).toBe(false);
    expect(policyInForce({ 'dead-letter-exchange': '', 'delivery-limit': 50 })).toBe(false);
    expect(policyInForce({ 'dead-letter-exchange': 'dlx' })).toBe(false);
    expect(policyInForce(undefined)).toBe(false);
  });
});

describe('winningPolicies (a queue the broker has no statistics for yet)', () => {
  it('is the matching policy of the highest priority', () => {
    const ours = policy('^svc\\.work$', 10, safe);
    const operators = policy('^svc\\.', 100, { 'max-length': 5 });
    expect(winningPolicies('svc.work', [ours, operators])).toEqual([{ 'max-length': 5 }]);
    expect(
      winningPolicies('svc.work', [ours, policy('^other$', 100, {}), policy('^svc', 100, {}, 'exchanges')]),
    ).toEqual([safe]);
  });

  it('returns every tie, and nothing when no policy matches', () => {
    expect(winningPolicies('svc.work', [policy('^svc', 10, safe), policy('work$', 10, {})])).toHaveLength(2);
    expect(winningPolicies('svc.work', [policy('^other$', 10, safe)])).toEqual([]);
  });
});
