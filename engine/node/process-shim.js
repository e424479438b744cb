// engine/node/process-shim.js — `require('process')` inside the bundle (the
// npm packages ask for it): the agent's own process object.
'use strict';
module.exports = require('./host').process();
