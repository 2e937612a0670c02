import { BATCH_TIMEOUT_MS, transactionBudgetMs } from './queues';

describe('transactionBudgetMs', () => {
  it('ends the transaction a second before the production deadline', () => {
    expect(transactionBudgetMs(BATCH_TIMEOUT_MS)).toBe(9_000);
  });

  it('keeps a quarter of a short deadline as the margin, so the cancel lands before the runtime gives up', () => {
    expect(transactionBudgetMs(1_500)).toBe(1_125);
    expect(transactionBudgetMs(100)).toBe(75);
  });
});
