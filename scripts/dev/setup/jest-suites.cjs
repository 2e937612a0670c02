// The two jest runs of `npm test`, derived from the root jest.config.js so they follow it:
//  - regular:    every test except *.disruptive.test.ts (in parallel, as configured)
//  - disruptive: only *.disruptive.test.ts (they restart or disconnect the whole broker; --runInBand)
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../../..');
const DISRUPTIVE = '\\.disruptive\\.test\\.ts$';
const NOT_DISRUPTIVE = '^(?!.*\\.disruptive\\.test\\.ts$)';

function derive(kind) {
  const base = require(path.join(ROOT, 'jest.config.js'));
  const adjust = (cfg) => ({
    ...cfg,
    testPathIgnorePatterns: [...(cfg.testPathIgnorePatterns ?? ['/node_modules/']), kind === 'regular' ? DISRUPTIVE : NOT_DISRUPTIVE],
  });
  const cfg = adjust({ ...base, rootDir: base.rootDir ? path.resolve(ROOT, base.rootDir) : ROOT });
  if (Array.isArray(base.projects)) cfg.projects = base.projects.map((p) => (typeof p === 'object' ? adjust(p) : p));
  return cfg;
}

module.exports = { derive, DISRUPTIVE };
