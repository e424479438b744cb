// Loaded before the parts of the Node/Web surface (build/gen/node/*.js) by
// build/jsrun: each part defines __chidoriNodePart(require, module,
// exports); a setter captures it and installs it at once with a require()
// that serves the parts loaded so far (as engine/prelude.js's nodePart()).
(function (G) {
        'use strict';
        var parts = {}, order = ['webEvents', 'blob'], n = 0;
        Object.defineProperty(G, '__surfaceParts', { value: parts });
        Object.defineProperty(G, '__chidoriNodePart', {
                configurable: true,
                set: function (install) {
                        var name = order[n++], module = { exports: {} };
                        install(function (p) {
                                if (p in parts) return parts[p];
                                throw new Error('surface/load.js: part ' + p + ' is not loaded here');
                        }, module, module.exports);
                        parts[name] = module.exports;
                },
        });
})(globalThis);
