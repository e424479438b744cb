// engine/node/util.js — node:util: the npm `util` package (promisify,
// callbackify, inherits, deprecate, types, is*), with format and inspect
// replaced by the engine's own (console.log prints the same), and
// TextEncoder/TextDecoder, isDeepStrictEqual, stripVTControlCharacters.
'use strict';
const host = require('./host');
const base = require('util/');

const util = Object.assign({}, base);
util.format = (...a) => host.format(a);
util.formatWithOptions = (o, ...a) => host.format(a);
function inspect(v, opts = undefined) {
        let depth = 2;
        if (opts !== null && typeof opts === 'object' && opts.depth !== undefined)
                depth = opts.depth === null || opts.depth === Infinity ? 1e9 : Number(opts.depth);
        return host.inspect(v, depth);
}
inspect.custom = Symbol.for('nodejs.util.inspect.custom');
inspect.defaultOptions = { depth: 2 };
util.inspect = inspect;
util.TextEncoder = TextEncoder;
util.TextDecoder = TextDecoder;
util.isDeepStrictEqual = (a, b) => {
        try {
                require('assert/').deepStrictEqual(a, b);
                return true;
        } catch (e) {
                return false;
        }
};
util.stripVTControlCharacters = (s) => String(s).replace(/[\u001b\u009b][[\]()#;?]*(?:(?:(?:(?:;[-a-zA-Z\d/#&.:=?%@~_]+)*|[a-zA-Z\d]+(?:;[-a-zA-Z\d/#&.:=?%@~_]*)*)?\u0007)|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PR-TZcf-ntqry=><~]))/g, '');
util.toUSVString = (s) => String(s).toWellFormed ? String(s).toWellFormed() : String(s);
util.aborted = (signal) => new Promise((res) => {
        if (signal.aborted)
                res();
        else
                signal.addEventListener('abort', () => res(), { once: true });
});
module.exports = util;
