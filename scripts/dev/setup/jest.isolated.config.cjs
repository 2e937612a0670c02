// `npm test`, beside the first run (--runInBand): only *.isolated.test.ts. See jest-suites.cjs.
module.exports = require('./jest-suites.cjs').derive('isolated');
