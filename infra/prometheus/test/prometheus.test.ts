// The Prometheus and Alertmanager configuration, checked by the tools that consume it: promtool
// (config, rules, rule unit tests) and amtool. Each check is also shown to fail on a broken input,
// so a tool that silently accepts everything would not pass this file.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { DEFAULT_PORTS } from '@community/config';

const ROOT = path.resolve(__dirname, '../../..');
const PROM_DIR = path.join(ROOT, 'infra/prometheus');
const RULES = path.join(PROM_DIR, 'rules/community.rules.yml');
const RULE_TESTS = path.join(PROM_DIR, 'rules-tests/community.rules.test.yml');
const ALERTMANAGER = path.join(ROOT, 'infra/alertmanager/alertmanager.yml');

/** The alerts the project operates with (docs/RUNBOOK.md has a `## <name>` section for each). */
const ALERTS = [
  'CommunityQueueBacklogHigh',
  'CommunityQueueMessageTooOld',
  'CommunityDlqGrowing',
  'CommunityQueueNoConsumers',
  'CommunityHandlerErrorsHigh',
  'CommunityRetryRateHigh',
  'CommunityOutboxLagHigh',
  'CommunityCounterDrift',
  'CommunityServiceDown',
  'CommunityUnroutableMessages',
  'CommunityConnectionChurnHigh',
  'RabbitmqMemoryAlarm',
  'RabbitmqDiskAlarm',
  'RabbitmqFileDescriptorsHigh',
  'CommunitySmtpBreakerOpen',
  'CommunityFanoutLagHigh',
  'CommunityJobNotRunning',
];

function tool(bin: string, args: string[], cwd = ROOT): { code: number | null; out: string; stdout: string } {
  const res = spawnSync(bin, args, { cwd, encoding: 'utf8', timeout: 30_000 });
  if (res.error)
    throw new Error(`${bin}: ${res.error.message} (npm test installs it; see scripts/dev/setup/tools.mjs)`);
  return { code: res.status, out: `${res.stdout}${res.stderr}`, stdout: res.stdout };
}

interface Rule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules = (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap(
  (g) => g.rules,
);

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'prom-config-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('prometheus.yml', () => {
  const config = parse(readFileSync(path.join(PROM_DIR, 'prometheus.yml'), 'utf8')) as {
    rule_files: string[];
    alerting: { alertmanagers: Array<{ static_configs: Array<{ targets: string[] }> }> };
    scrape_configs: Array<{
      job_name: string;
      metrics_path?: string;
      params?: Record<string, string[]>;
      static_configs: Array<{ targets: string[] }>;
    }>;
  };

  it('passes promtool check config, with the rule files it names loaded', () => {
    // The container path of the rules (/etc/prometheus/rules) pointed at the repository's copy, so
    // promtool also loads and checks the rules the glob matches.
    const text = readFileSync(path.join(PROM_DIR, 'prometheus.yml'), 'utf8').replaceAll(
      '/etc/prometheus/rules/',
      `${PROM_DIR}/rules/`,
    );
    writeFileSync(path.join(tmp, 'prometheus.yml'), text);
    const res = tool('promtool', ['check', 'config', path.join(tmp, 'prometheus.yml')]);
    expect(res).toMatchObject({ code: 0 });
    expect(res.out).toContain(`SUCCESS: ${ALERTS.length} rules found`);

    writeFileSync(path.join(tmp, 'broken.yml'), text.replace('scrape_interval: 15s', 'scrape_interval: fifteen'));
    expect(tool('promtool', ['check', 'config', path.join(tmp, 'broken.yml')]).code).not.toBe(0);
  });

  it('scrapes every service on its port, both RabbitMQ endpoints, and alerts through alertmanager:9093', () => {
    const jobs = Object.fromEntries(config.scrape_configs.map((j) => [j.job_name, j]));
    const apps = readdirSync(path.join(ROOT, 'apps'));
    // Every service of the contract (apps built later included) and every app in apps/.
    for (const service of new Set([...Object.keys(DEFAULT_PORTS), ...apps])) {
      expect(jobs[service]?.static_configs[0].targets).toEqual([
        `${service}:${DEFAULT_PORTS[service as keyof typeof DEFAULT_PORTS]}`,
      ]);
    }
    expect(jobs.rabbitmq.static_configs[0].targets).toEqual(['rabbitmq:15692']);
    expect(jobs['rabbitmq-detailed']).toMatchObject({
      metrics_path: '/metrics/detailed',
      static_configs: [{ targets: ['rabbitmq:15692'] }],
    });
    expect(jobs['rabbitmq-detailed'].params!.family).toEqual(
      expect.arrayContaining(['queue_coarse_metrics', 'queue_consumer_count']),
    );
    expect(config.alerting.alertmanagers[0].static_configs[0].targets).toEqual(['alertmanager:9093']);
    expect(config.rule_files).toEqual(['/etc/prometheus/rules/*.rules.yml']);

    // CommunityServiceDown watches exactly the services' jobs.
    const down = rules.find((r) => r.alert === 'CommunityServiceDown')!;
    const watched = down.expr
      .match(/job=~"([^"]+)"/)![1]
      .split('|')
      .sort();
    expect(watched).toEqual(Object.keys(DEFAULT_PORTS).sort());
  });
});

describe('alert rules', () => {
  it('pass promtool check rules (and a broken expression does not)', () => {
    const res = tool('promtool', ['check', 'rules', RULES]);
    expect(res).toMatchObject({ code: 0 });
    expect(res.out).toContain(`SUCCESS: ${ALERTS.length} rules found`);
    writeFileSync(path.join(tmp, 'broken.rules.yml'), readFileSync(RULES, 'utf8').replace('> 1000', '> > 1000'));
    expect(tool('promtool', ['check', 'rules', path.join(tmp, 'broken.rules.yml')]).code).not.toBe(0);
  });

  it('are exactly the operated alerts, each with a severity and its runbook section', () => {
    expect(rules.map((r) => r.alert).sort()).toEqual([...ALERTS].sort());
    for (const r of rules) {
      expect({ alert: r.alert, severity: r.labels?.severity }).toEqual({
        alert: r.alert,
        severity: expect.stringMatching(/^(warning|critical)$/),
      });
      expect({ alert: r.alert, runbook: r.annotations?.runbook_url }).toEqual({
        alert: r.alert,
        runbook: `docs/RUNBOOK.md#${r.alert.toLowerCase()}`,
      });
      expect(r.annotations?.summary).toBeTruthy();
    }
    // Each runbook_url anchor resolves: docs/RUNBOOK.md has a `## <AlertName>` heading for it.
    const headings = readFileSync(path.join(ROOT, 'docs/RUNBOOK.md'), 'utf8')
      .match(/^## \S+$/gm)!
      .map((h) => h.slice(3).toLowerCase());
    expect(
      rules.map((r) => r.annotations!.runbook_url!.split('#')[1]).filter((anchor) => !headings.includes(anchor)),
    ).toEqual([]);
  });

  it('pass their promtool unit tests, which fire every alert once and hold it back once', () => {
    const res = tool('promtool', ['test', 'rules', path.basename(RULE_TESTS)], path.dirname(RULE_TESTS));
    if (res.code !== 0) throw new Error(res.out);

    const suite = parse(readFileSync(RULE_TESTS, 'utf8')) as {
      tests: Array<{ name: string; alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
    };
    const cases = suite.tests.flatMap((t) => t.alert_rule_test);
    for (const alert of ALERTS) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect({
        alert,
        fires: mine.some((c) => c.exp_alerts.length > 0),
        holds: mine.some((c) => c.exp_alerts.length === 0),
      }).toEqual({ alert, fires: true, holds: true });
    }

    // The unit tests can fail: with a threshold moved, the firing case of that alert no longer matches.
    const rulesCopy = path.join(tmp, 'rules/community.rules.yml');
    spawnSync('mkdir', ['-p', path.dirname(rulesCopy)]);
    writeFileSync(rulesCopy, readFileSync(RULES, 'utf8').replace('> 1000', '> 100000'));
    writeFileSync(
      path.join(tmp, 'tests.yml'),
      readFileSync(RULE_TESTS, 'utf8').replace('../rules/community.rules.yml', rulesCopy),
    );
    const broken = tool('promtool', ['test', 'rules', 'tests.yml'], tmp);
    expect(broken.code).not.toBe(0);
    expect(broken.out).toContain('CommunityQueueBacklogHigh');
  });
});

describe('alertmanager.yml', () => {
  it('passes amtool check-config (and a broken route does not)', () => {
    const res = tool('amtool', ['check-config', ALERTMANAGER]);
    expect(res).toMatchObject({ code: 0 });
    writeFileSync(
      path.join(tmp, 'am-broken.yml'),
      readFileSync(ALERTMANAGER, 'utf8').replace('receiver: slack-warning', 'receiver: nobody'),
    );
    expect(tool('amtool', ['check-config', path.join(tmp, 'am-broken.yml')]).code).not.toBe(0);
  });

  it('sends every alert, and its resolution, to Slack with the webhook URL read from a mounted secret', () => {
    const text = readFileSync(ALERTMANAGER, 'utf8');
    const am = parse(text) as {
      global: { slack_api_url?: string; slack_api_url_file?: string };
      receivers: Array<{ name: string; slack_configs?: Array<{ send_resolved?: boolean; api_url?: string }> }>;
    };
    expect(am.global.slack_api_url_file).toBe('/run/secrets/slack_webhook_url');
    expect(am.global.slack_api_url).toBeUndefined();
    expect(text).not.toMatch(/hooks\.slack\.com/); // no webhook URL in the repository
    expect(am.receivers.length).toBeGreaterThan(0);
    for (const r of am.receivers) {
      expect(r.slack_configs?.length).toBeGreaterThan(0);
      for (const s of r.slack_configs!)
        expect({ receiver: r.name, send_resolved: s.send_resolved, api_url: s.api_url }).toEqual({
          receiver: r.name,
          send_resolved: true,
          api_url: undefined,
        });
    }
    // The routing tree sends each severity somewhere: amtool answers which receiver takes an alert.
    const route = (labels: string[]) =>
      tool('amtool', ['config', 'routes', 'test', '--config.file', ALERTMANAGER, ...labels]).stdout.trim();
    expect(route(['alertname=RabbitmqDiskAlarm', 'severity=critical'])).toBe('slack-critical');
    expect(route(['alertname=CommunityDlqGrowing', 'severity=warning'])).toBe('slack-warning');
  });
});
