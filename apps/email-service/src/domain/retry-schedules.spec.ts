import { digestRetryDelayMs, optOutSyncRetryDelayMs } from './retry-schedules';

it('digests are retried after 30 s, doubling, capped at one hour', () => {
  expect([1, 2, 3, 4, 8, 20].map(digestRetryDelayMs)).toEqual([30_000, 60_000, 120_000, 240_000, 3_600_000, 3_600_000]);
  expect(digestRetryDelayMs(0)).toBe(30_000);
});

it('opt-out syncs are retried after 10 s, doubling, capped at one hour', () => {
  expect([1, 2, 3, 9, 30].map(optOutSyncRetryDelayMs)).toEqual([10_000, 20_000, 40_000, 2_560_000, 3_600_000]);
});
