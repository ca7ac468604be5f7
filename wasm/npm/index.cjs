// CommonJS entry: the ESM entry, loaded with require(esm) (Node 20.19+ and
// 22.12+), so `require` and `import` share one module and one set of error
// classes.
'use strict';
module.exports = require('./index.js');
