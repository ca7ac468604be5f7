// CommonJS entry of `loomfence/services`: the ESM entry, loaded with
// require(esm), so `require` and `import` share one module, one resume
// entry and one set of error classes.
'use strict';
module.exports = require('./services.js');
