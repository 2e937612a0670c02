// Maps the tsconfig.base.json path aliases (@community/x) for jest, so tests import libs by name.
const path = require('node:path');
const { compilerOptions } = require('../../tsconfig.base.json');

exports.pathsToModuleNameMapper = () => {
  const map = {};
  for (const [alias, [target]] of Object.entries(compilerOptions.paths)) {
    map[`^${alias.replace('/', '\\/')}$`] = path.join(__dirname, '../..', target);
  }
  return map;
};
