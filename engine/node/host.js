// engine/node/host.js — what the prelude hands __chidoriInstallNode(host):
// filled in once, before any module of the bundle runs.
//   process()        the agent's process object (engine/prelude.js)
//   format(args)     util.format, the same as console.log's
//   inspect(v, depth) util.inspect, the same as console.log's
//   setTimeout, clearTimeout, setImmediate, clearImmediate, setInterval, clearInterval
'use strict';
module.exports = {};
