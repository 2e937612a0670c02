// Maps the tsconfig.base.json path aliases (@community/x) for jest, so tests import libs by name.
const path = require('node:path');
const { compilerOptions } = require('../../tsconfig.base.json');

exports.pathsToModuleNameMapper = () => {
  const map = {};
  for (const [alias, [target]] of Object.entries(compilerOptions.paths)) {
    // Wildcard entries only give tsc the types of packages whose subpath exports its "node"
    // resolution cannot read (@grafana/grafana-foundation-sdk/*); jest resolves those by exports.
    if (alias.includes('*')) continue;
    map[`^${alias.replace('/', '\\/')}$`] = path.join(__dirname, '../..', target);
  }
  return map;
};
