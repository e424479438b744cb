// engine/node/timers.js — node:timers and node:timers/promises over the
// engine's timers (engine/prelude.js).
'use strict';
const host = require('./host');

const timers = {
        setTimeout: (...a) => host.setTimeout(...a),
        clearTimeout: (id) => host.clearTimeout(id),
        setInterval: (...a) => host.setInterval(...a),
        clearInterval: (id) => host.clearInterval(id),
        setImmediate: (...a) => host.setImmediate(...a),
        clearImmediate: (id) => host.clearImmediate(id),
};

function abortErr(signal) {
        const e = new Error('The operation was aborted');
        e.name = 'AbortError';
        e.code = 'ABORT_ERR';
        e.cause = signal.reason;
        return e;
}
function later(schedule, clear, value, options) {
        const signal = options && options.signal;
        if (signal && signal.aborted)
                return Promise.reject(abortErr(signal));
        return new Promise((resolve, reject) => {
                let onAbort;
                const id = schedule(() => {
                        if (signal)
                                signal.removeEventListener('abort', onAbort);
                        resolve(value);
                });
                if (signal) {
                        onAbort = () => {
                                clear(id);
                                reject(abortErr(signal));
                        };
                        signal.addEventListener('abort', onAbort, { once: true });
                }
        });
}
const promises = {
        setTimeout: (delay, value, options) => later((f) => host.setTimeout(f, delay), host.clearTimeout, value, options),
        setImmediate: (value, options) => later((f) => host.setImmediate(f), host.clearImmediate, value, options),
        async *setInterval(delay, value, options) {
                for (;;) {
                        await later((f) => host.setTimeout(f, delay), host.clearTimeout, undefined, options);
                        yield value;
                }
        },
        scheduler: {
                wait: (delay, options) => later((f) => host.setTimeout(f, delay), host.clearTimeout, undefined, options),
                yield: () => later((f) => host.setImmediate(f), host.clearImmediate, undefined, undefined),
        },
};
timers.promises = promises;
module.exports = { timers, promises };
