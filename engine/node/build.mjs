// engine/node/build.mjs — bundle engine/node/entry.js and the npm packages it
// uses (tools/package.json, pinned by tools/package-lock.json) into one
// script the worker embeds: node build.mjs OUT.  Run by the Makefile.
//
// The bundle is an IIFE that defines one hidden global,
// __chidoriInstallNode(host), and evaluates no module body: esbuild wraps
// every CommonJS module in a function that runs on its first require, so a
// module costs nothing until an agent touches it (docs/api.md).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const tools = path.join(root, 'tools', 'node_modules');
const esbuild = createRequire(path.join(tools, 'x.js'))('esbuild');
const out = process.argv[2];
if (!out) {
        console.error('usage: node engine/node/build.mjs OUT.js');
        process.exit(2);
}

// readable-stream and util reach for the `process` package: give them the
// agent's process object (engine/process.js) instead.
const aliases = {
        name: 'chidori-aliases',
        setup(b) {
                b.onResolve({ filter: /^process\/?$/ }, () => ({ path: path.join(here, 'process-shim.js') }));
                // url's parse(s, true) wants a query-string parser: Node's own
                // querystring (querystring-es3), not qs and its 60 kB of helpers.
                b.onResolve({ filter: /^qs$/ }, () => ({ path: path.join(tools, 'querystring-es3', 'index.js') }));
        },
};

await esbuild.build({
        entryPoints: [path.join(here, 'entry.js')],
        outfile: out,
        bundle: true,
        format: 'iife',
        platform: 'browser',
        target: 'es2022',
        nodePaths: [tools],
        mainFields: ['browser', 'main'],
        legalComments: 'eof',
        minifyWhitespace: true,
        minifySyntax: true,
        charset: 'utf8',
        logLevel: 'warning',
        plugins: [aliases],
        banner: { js: '/* chidori: the Node/Web surface bundle (engine/node/build.mjs); generated, do not edit. */' },
});
