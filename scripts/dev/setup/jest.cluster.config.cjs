// `npm test`, last phase, beside the disruptive run (--runInBand): only *.cluster.test.ts. See jest-suites.cjs.
module.exports = require('./jest-suites.cjs').derive('cluster');
