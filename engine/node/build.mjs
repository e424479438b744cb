// engine/node/build.mjs — bundle the Node/Web surface (engine/node/*.js and
// the npm packages of tools/package.json, pinned by tools/package-lock.json)
// into one script per part, and the assembly that embeds them:
//     node engine/node/build.mjs OUTDIR     (the Makefile: build/gen)
// writes OUTDIR/node/PART.js for each part below and OUTDIR/node-parts.S,
// a table {name, source} the worker's native load("node.PART") looks parts up in.
//
// Each part is evaluated on its first use only (engine/prelude.js, "the
// Node/Web surface"), and a part pays only for its own packages: a package
// that another part provides (buffer, events, util, ...) is not copied in but
// asked of that part at run time, so every part sees the same Buffer class.
// A part's script defines one hidden global,
//     __chidoriNodePart = function (require, module, exports) { ... }
// which the prelude captures, deletes and calls once with its require().
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const tools = path.join(root, 'tools', 'node_modules');
const esbuild = createRequire(path.join(tools, 'x.js'))('esbuild');
const outdir = process.argv[2];
if (!outdir) {
        console.error('usage: node engine/node/build.mjs OUTDIR');
        process.exit(2);
}

// part -> the CommonJS source of its entry (resolved from engine/node/).
// Part names are [a-zA-Z] (the native load() takes "node.PART").
const PARTS = {
        buffer: "module.exports = require('buffer/');",
        events: "module.exports = require('events/');",
        path: "module.exports = require('path-browserify');",
        util: "module.exports = require('./util');",
        url: "module.exports = require('./url');",
        querystring: "module.exports = require('./querystring');",
        stringDecoder: "module.exports = require('string_decoder/');",
        stream: "module.exports = require('readable-stream');",
        assert: "module.exports = require('assert/');",
        timers: "module.exports = require('./timers');",
        webEvents: "module.exports = require('./events-web');",
        blob: "module.exports = require('./blob');",
        streams: "module.exports = Object.assign({}, require('web-streams-polyfill'), require('./text-streams'));",
};
// An import path -> the part that provides it (asked for at run time by
// every other part); 'host' and 'process' are the prelude's own.
const OWNER = [
        [/^buffer\/?$/, 'buffer'], [/^events\/?$/, 'events'], [/^path-browserify$/, 'path'],
        [/^util\/?$/, 'util'], [/^string_decoder\/?$/, 'stringDecoder'], [/^assert\/?$/, 'assert'],
        [/^web-streams-polyfill$/, 'streams'], [/^process\/?$/, 'process'], [/^\.\/host$/, 'host'],
];

function partPlugin(part) {
        return {
                name: 'chidori-parts',
                setup(b) {
                        b.onResolve({ filter: /.*/ }, (args) => {
                                if (args.kind === 'entry-point')
                                        return undefined;
                                // url's parse(s, true) wants a query-string parser: Node's own
                                // querystring (querystring-es3), not qs and its 60 kB of helpers.
                                if (args.path === 'qs')
                                        return { path: path.join(tools, 'querystring-es3', 'index.js') };
                                for (const [re, owner] of OWNER) {
                                        if (!re.test(args.path))
                                                continue;
                                        // The part's own package (util's wrapper requires 'util/').
                                        if (owner === part)
                                                return undefined;
                                        return { path: owner, external: true };
                                }
                                return undefined;
                        });
                },
        };
}

fs.mkdirSync(path.join(outdir, 'node'), { recursive: true });
const names = Object.keys(PARTS);
for (const part of names) {
        const out = path.join(outdir, 'node', part + '.js');
        await esbuild.build({
                stdin: { contents: PARTS[part], resolveDir: here, sourcefile: 'chidori-node-' + part + '.js', loader: 'js' },
                outfile: out + '.tmp',
                bundle: true,
                format: 'cjs',
                platform: 'browser',
                target: 'es2022',
                nodePaths: [tools],
                mainFields: ['browser', 'main'],
                legalComments: 'eof',
                minifyWhitespace: true,
                minifySyntax: true,
                charset: 'utf8',
                logLevel: 'warning',
                plugins: [partPlugin(part)],
                banner: { js: '/* chidori: the Node/Web surface, part ' + part + ' (engine/node/build.mjs); generated. */\n' +
                              'globalThis.__chidoriNodePart = function (require, module, exports) {' },
                footer: { js: '};' },
        });
        fs.renameSync(out + '.tmp', out);
}

// The table: pairs of pointers {name, NUL-terminated source}, then {0, 0}.
let s = '/* generated by engine/node/build.mjs: the parts of the Node/Web surface */\n' +
        '        .section .data.rel.ro,"aw"\n        .global chidori_node_parts\n        .balign 8\n' +
        'chidori_node_parts:\n';
names.forEach((n, i) => {
        s += '        .quad .Lname' + i + ', .Lsrc' + i + '\n';
});
s += '        .quad 0, 0\n        .section .rodata\n';
names.forEach((n, i) => {
        s += '.Lname' + i + ':\n        .asciz "' + n + '"\n        .balign 16\n.Lsrc' + i + ':\n        .incbin "' +
                path.join(path.resolve(outdir), 'node', n + '.js') + '"\n        .byte 0\n';
});
s += '        .section .note.GNU-stack,"",@progbits\n';
fs.writeFileSync(path.join(outdir, 'node-parts.S.tmp'), s);
fs.renameSync(path.join(outdir, 'node-parts.S.tmp'), path.join(outdir, 'node-parts.S'));
