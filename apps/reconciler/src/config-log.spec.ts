import { redactConfig } from '@community/config';
import { createLogger } from '@community/observability';
import { loadReconcilerConfig, RECONCILER_CONFIG } from './config';

/**
 * RABBITMQ_MANAGEMENT_URL carries the management user's password (http://user:pass@host:15672).
 * The startup line `configuration` (serviceMain logs redactConfig's copy) and the config error a
 * wrong value stops the process with must not show it, whatever characters the password has.
 */
function configurationLine(env: Record<string, string>): string {
  const lines: string[] = [];
  // The logger every service runs with (its own line-level masking included), recording its output.
  const logger = createLogger({
    service: 'reconciler',
    destination: { write: (line: string) => void lines.push(line) },
  });
  logger.info({ config: redactConfig(RECONCILER_CONFIG, loadReconcilerConfig(env)) }, 'configuration');
  return lines[0];
}

describe('the management URL in what the reconciler logs', () => {
  it.each([
    ['a plain password', 'http://ops:s3cret-pw@rabbit:15672', 's3cret-pw'],
    ['a password with a double quote', 'http://ops:s3"cret@rabbit:15672', 's3\\"cret'],
    ['a password with a backslash', 'http://ops:s3\\cret@rabbit:15672', 's3\\\\cret'],
  ])('the configuration line masks %s', (_what, url, asLogged) => {
    const line = configurationLine({ RABBITMQ_MANAGEMENT_URL: url });
    expect(line).not.toContain(asLogged);
    expect(JSON.parse(line).config.RABBITMQ_MANAGEMENT_URL).toBe('http://ops:***@rabbit:15672');
  });

  it('a config error about it names the variable and its scheme, not its password', () => {
    let message = '';
    try {
      loadReconcilerConfig({ RABBITMQ_MANAGEMENT_URL: 'rabbit://ops:s3cret-pw@rabbit:15672' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(
      /RABBITMQ_MANAGEMENT_URL: must start with http:\/\/ or https:\/\/ \(its scheme: "rabbit:"\)/,
    );
    expect(message).not.toContain('s3cret-pw');
  });
});
