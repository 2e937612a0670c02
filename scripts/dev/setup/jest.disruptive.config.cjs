// `npm test`, last run, alone (--runInBand): only *.disruptive.test.ts. See jest-suites.cjs.
module.exports = require('./jest-suites.cjs').derive('disruptive');
