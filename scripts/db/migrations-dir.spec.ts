import { orderedMigrationName } from './migrations-dir';

describe('a new migration sorts after every existing one', () => {
  it("keeps the engine's name when the clock is past the latest migration", () => {
    expect(
      orderedMigrationName('20261202060000_add_widgets', ['20261129115112_init', '20261202040000_user_erasures']),
    ).toBe('20261202060000_add_widgets');
    expect(orderedMigrationName('20261202060000_add_widgets', [])).toBe('20261202060000_add_widgets');
  });

  it('goes one second after a migration whose timestamp is later than the clock, across a day boundary', () => {
    expect(
      orderedMigrationName('20261202035503_add_widgets', ['20261129115112_init', '20261202040000_user_erasures']),
    ).toBe('20261202040001_add_widgets');
    expect(orderedMigrationName('20261202035503_add_widgets', ['20261231235959_later'])).toBe(
      '20270101000000_add_widgets',
    );
    expect(orderedMigrationName('20261202040000_same_second', ['20261202040000_user_erasures'])).toBe(
      '20261202040001_same_second',
    );
  });
});
