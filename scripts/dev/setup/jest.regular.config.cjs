// `npm test`, first run: everything but *.disruptive.test.ts and *.isolated.test.ts. See jest-suites.cjs.
module.exports = require('./jest-suites.cjs').derive('regular');
