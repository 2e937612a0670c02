// The three jest runs of `npm test`, derived from the root jest.config.js so they follow it:
//  - regular:    every test but the two kinds below (in parallel, as configured);
//  - isolated:   only *.isolated.test.ts: each starts servers of its own (a RabbitMQ node, a Postgres
//                cluster, a Redis) and loads the machine, but touches nothing shared, so this run goes
//                beside the regular one, one file at a time (--runInBand);
//  - disruptive: only *.disruptive.test.ts (they restart or disconnect the shared broker; --runInBand,
//                after the other two, alone);
//  - cluster:    only *.cluster.test.ts: the cluster fault suite's short profile (a 3-node RabbitMQ
//                cluster of its own); after the first two, beside the disruptive run, which is short
//                and touches nothing it uses.
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../../..');
const DISRUPTIVE = '\\.disruptive\\.test\\.ts$';
const ISOLATED = '\\.isolated\\.test\\.ts$';
const CLUSTER = '\\.cluster\\.test\\.ts$';
/** testPathIgnorePatterns that leave only the files matching `pattern`. */
const only = (pattern) => `^(?!.*${pattern})`;
const IGNORE = {
  regular: [DISRUPTIVE, ISOLATED, CLUSTER],
  isolated: [only(ISOLATED)],
  disruptive: [only(DISRUPTIVE)],
  cluster: [only(CLUSTER)],
};

function derive(kind) {
  const base = require(path.join(ROOT, 'jest.config.js'));
  const adjust = (cfg) => ({
    ...cfg,
    testPathIgnorePatterns: [...(cfg.testPathIgnorePatterns ?? ['/node_modules/']), ...IGNORE[kind]],
  });
  const cfg = adjust({ ...base, rootDir: base.rootDir ? path.resolve(ROOT, base.rootDir) : ROOT });
  if (Array.isArray(base.projects)) cfg.projects = base.projects.map((p) => (typeof p === 'object' ? adjust(p) : p));
  return cfg;
}

module.exports = { derive, DISRUPTIVE, ISOLATED, CLUSTER };
