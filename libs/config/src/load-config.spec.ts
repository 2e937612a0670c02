import { ConfigError, loadConfig, redactConfig } from './load-config';

function issuesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues.map((i) => i.message);
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  const spec = [
    { name: 'AMQP_URL', kind: 'url', protocols: ['amqp:', 'amqps:'] },
    { name: 'NAME', kind: 'string', minLength: 3 },
    { name: 'PORT', kind: 'int', min: 0, max: 65535 },
    { name: 'TIMEOUT_MS', kind: 'duration-ms', min: 1 },
    { name: 'MODE', kind: 'enum', values: ['fast', 'safe'] },
    { name: 'ENABLED', kind: 'bool' },
    { name: 'TIERS', kind: 'int-list', min: 1 },
  ] as const;

  const valid = {
    AMQP_URL: 'amqps://u:p@broker:5671',
    NAME: 'abc',
    PORT: '8080',
    TIMEOUT_MS: '10s',
    MODE: 'safe',
    ENABLED: 'yes',
    TIERS: '1000, 4000,16000',
  };

  it('parses every kind into a typed value', () => {
    const cfg = loadConfig(spec, valid);
    expect(cfg).toEqual({
      AMQP_URL: 'amqps://u:p@broker:5671',
      NAME: 'abc',
      PORT: 8080,
      TIMEOUT_MS: 10_000,
      MODE: 'safe',
      ENABLED: true,
      TIERS: [1000, 4000, 16000],
    });
    // Compile-time checks: the type follows the spec.
    const port: number = cfg.PORT;
    const mode: 'fast' | 'safe' = cfg.MODE;
    const tiers: number[] = cfg.TIERS;
    // @ts-expect-error undeclared variables are not on the type
    void cfg.NOT_DECLARED;
    expect([port, mode, tiers.length]).toEqual([8080, 'safe', 3]);
  });

  it.each([
    ['AMQP_URL', 'foo', 'AMQP_URL: "foo" is not a valid URL (expected amqp:// or amqps://)'],
    ['AMQP_URL', 'http://broker', 'AMQP_URL: "http://broker" has protocol http: (expected amqp:// or amqps://)'],
    ['NAME', 'ab', 'NAME: "ab" is too short (expected at least 3 characters)'],
    ['PORT', 'abc', 'PORT: "abc" is not an integer (expected an integer between 0 and 65535)'],
    ['PORT', '70000', 'PORT: "70000" is out of range (expected an integer between 0 and 65535)'],
    ['PORT', '80.5', 'PORT: "80.5" is not an integer'],
    ['TIMEOUT_MS', 'soon', 'TIMEOUT_MS: "soon" is not a duration (expected milliseconds like 10000'],
    ['TIMEOUT_MS', '0', 'TIMEOUT_MS: "0" is out of range'],
    ['MODE', 'turbo', 'MODE: "turbo" is not allowed (expected one of: fast, safe)'],
    ['ENABLED', 'maybe', 'ENABLED: "maybe" is not a boolean (expected true/false'],
    ['TIERS', '1000,x', 'TIERS: "1000,x" has an invalid item "x" (expected comma-separated integers >= 1'],
    ['TIERS', '1000,0', 'TIERS: "1000,0" has an invalid item "0"'],
  ])('%s=%j is rejected with a message naming the variable', (name, value, message) => {
    const issues = issuesOf(() => loadConfig(spec, { ...valid, [name]: value }));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toContain(message);
  });

  it('reports all problems together, including missing required variables', () => {
    let error: ConfigError | undefined;
    try {
      loadConfig(spec, { ...valid, AMQP_URL: 'foo', PORT: 'x', MODE: undefined });
    } catch (err) {
      error = err as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.issues.map((i) => i.name)).toEqual(['AMQP_URL', 'PORT', 'MODE']);
    expect(error?.message).toContain('Invalid configuration (3 problems)');
    expect(error?.message).toContain('MODE: is required but not set (expected one of: fast, safe)');
  });

  it('uses defaults for unset or empty variables, and optional ones may stay undefined', () => {
    const cfg = loadConfig(
      [
        { name: 'RETRY_TIERS', kind: 'int-list', default: [1000, 4000] },
        { name: 'DEBUG', kind: 'bool', default: false },
        { name: 'EXTRA', kind: 'string', optional: true },
      ] as const,
      { DEBUG: '' },
    );
    expect(cfg).toEqual({ RETRY_TIERS: [1000, 4000], DEBUG: false, EXTRA: undefined });
    const extra: string | undefined = cfg.EXTRA;
    expect(extra).toBeUndefined();
  });

  it('never echoes secrets or URL passwords in error messages', () => {
    const issues = issuesOf(() =>
      loadConfig(
        [
          { name: 'TOKEN', kind: 'string', secret: true, minLength: 32 },
          { name: 'DB', kind: 'url', protocols: ['postgresql:'] },
        ] as const,
        { TOKEN: 'hunter2', DB: 'mysql://app:hunter2@db/x' },
      ),
    );
    expect(issues.join('\n')).not.toContain('hunter2');
    expect(issues[0]).toBe('TOKEN: the value is too short (expected at least 32 characters)');
    expect(issues[1]).toContain('"mysql://app:***@db/x"');
  });

  it('redactConfig masks secrets and URL credentials for a startup log line', () => {
    const s = [
      { name: 'TOKEN', kind: 'string', secret: true },
      { name: 'DB', kind: 'url' },
      { name: 'PORT', kind: 'int' },
    ] as const;
    const cfg = loadConfig(s, { TOKEN: 'hunter2', DB: 'postgresql://app:hunter2@db/x', PORT: '1' });
    expect(redactConfig(s, cfg)).toEqual({ TOKEN: '[secret]', DB: 'postgresql://app:***@db/x', PORT: 1 });
  });

  it('rejects a spec that declares a variable twice', () => {
    expect(() =>
      loadConfig(
        [
          { name: 'A', kind: 'string' },
          { name: 'A', kind: 'int' },
        ],
        { A: '1' },
      ),
    ).toThrow('config spec declares A twice');
  });
});
