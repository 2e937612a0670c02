import { authGuards } from '@community/service';
import { eventually } from '@community/testing';
import { JWT_SECRET, OPERATORS, orderId, startDlqHarness, WORK, type DlqHarness } from './dlq-harness';
import { runOpsCli } from './ops-cli';

/**
 * `npm run ops` as an operator runs it: the CLI spawned as a process against a reconciler app
 * listening on a port (the DLQ console built in-process on a real broker and database).
 *
 * The reconciler's checklist endpoint (GET /v1/admin/status) belongs to the other half of the
 * reconciler; here a stand-in answers its documented shape, so the CLI's merging and exit codes are
 * tested against real DLQ data. The recount endpoint is absent on purpose: the CLI must say so.
 *
 * The CLI signs with frank's own key (OPS_ADMIN_KEY_FILE, OPS_ADMIN_KEY_ID); the audit must name
 * the operator ADMIN_KEYS binds to that kid, whatever else the environment says (OPS_USER, a
 * JWT_SECRET that could mint user tokens).
 */
let h: DlqHarness;
let base: string;
const reconChecks = {
  ok: true,
  checks: [{ name: 'consumers', ok: true, value: 1, threshold: 1, runbook: 'docs/RUNBOOK.md#check-consumers' }],
};

beforeAll(async () => {
  h = await startDlqHarness('ops', {
    extraRoutes: (app) => {
      const { adminOnly } = authGuards({ prefix: 'RC_', resource: 'data' });
      app.get('/v1/admin/status', { onRequest: adminOnly }, async () => reconChecks);
    },
  });
  base = await h.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => h?.close());

const ops = (...args: string[]) =>
  runOpsCli(args, {
    RECONCILER_URL: base,
    JWT_SECRET,
    OPS_USER: 'mallory',
    OPS_TOKEN: '',
    ...OPERATORS.cliEnv('frank'),
  });

it('status exits 0 when every check passes, and 1 naming the DLQ, its runbook section and the top cause when a DLQ holds messages', async () => {
  const healthy = await ops('status');
  expect(healthy.stdout).toMatch(/^OK {4}consumers /m);
  expect(healthy.stdout).toMatch(/^OK {4}dlq /m);
  expect(healthy.code).toBe(0);

  const ids = [orderId(), orderId()];
  await h.deadLetter(ids.map((id) => ({ id, type: 'order.placed', reason: `coupon ${id} expired` })));
  const failing = await ops('status');
  expect(failing.code).toBe(1);
  expect(failing.stdout).toMatch(
    new RegExp(
      `^FAIL  dlq .*2 \\(threshold 0\\) — ${WORK}\\.dlq 2 \\(oldest \\d+ s\\)  → see docs/RUNBOOK\\.md#check-dlq$`,
      'm',
    ),
  );
  expect(failing.stdout).toMatch(/2× PermanentError: coupon <uuid> expired/);

  const json = await ops('status', '--json');
  expect(json.code).toBe(1);
  expect(JSON.parse(json.stdout)).toMatchObject({
    ok: false,
    checks: [
      { name: 'consumers', ok: true },
      { name: 'dlq', ok: false, value: 2 },
    ],
  });
});

it('dlq replay dry-runs without --yes, and with --yes replays exactly what the dry run matched, audited under the verified operator', async () => {
  h.poisoned.clear();
  const { body } = (await h.app.inject({
    url: '/v1/admin/dlq/groups?q=coupon',
    headers: h.adminHeaders(),
  })) as unknown as { body: string };
  const group = JSON.parse(body).groups[0].fingerprint as string;

  const list = await ops('dlq', 'list', '--group', group, '--json');
  expect(JSON.parse(list.stdout).total).toBe(2);

  const dry = await ops('dlq', 'replay', '--group', group);
  expect(dry.code).toBe(0);
  expect(dry.stdout).toContain('Dry run: replay would act on 2 message(s).');
  expect(dry.stdout).toContain(`2 → ${WORK}`);
  expect((await h.pool.query(`SELECT count(*)::int AS n FROM dlq_operations`)).rows[0].n).toBe(0);

  const real = await ops('dlq', 'replay', '--group', group, '--rate', '50', '--yes');
  expect(real.stderr).toBe('');
  expect(real.code).toBe(0);
  expect(real.stdout).toMatch(/operation #\d+ replay: done 2\/2 \(2 ok, 0 failed, 0 skipped\)/);
  const audit = await h.pool.query(`SELECT requested_by, matched, succeeded FROM dlq_operations`);
  // frank: the operator of the kid that signed, not OPS_USER (the CLI sends no name at all).
  expect(audit.rows).toEqual([{ requested_by: 'frank', matched: 2, succeeded: 2 }]);
  await eventually(
    'replayed',
    async () =>
      (await h.pool.query(`SELECT count(*)::int AS n FROM test_inbox WHERE queue = $1`, [WORK])).rows[0].n === 2,
  );

  const after = await ops('status');
  expect(after.code).toBe(0);
});

it('says which endpoint is missing instead of failing obscurely, and refuses bad usage with exit 2', async () => {
  const recount = await ops('recount', '--user', 'u1');
  expect(recount.code).toBe(1);
  expect(recount.stderr).toContain(`the reconciler at ${base} does not serve POST /v1/admin/recount`);
  const usage = await ops('feed', 'rebuild');
  expect(usage.code).toBe(2);
  expect(usage.stderr).toContain('feed rebuild needs exactly one of --user U or --all');
});
