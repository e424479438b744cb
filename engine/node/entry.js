// engine/node/entry.js — the Node/Web surface, bundled with its npm packages
// by engine/node/build.mjs into one script the worker embeds and evaluates on
// first use (docs/api.md, "Node modules and the web surface").
//
// Defines one hidden global, __chidoriInstallNode(host) (host: see
// host.js); the prelude captures and deletes it and calls it once.  It
// returns {module(name), global(name), fetchBody(v), parseForm(bytes, type),
// ReadableStream}: module() gives node:NAME (cached: one object per name),
// global() the value of a lazily installed global.  Nothing below the
// require() calls runs before its first use.
'use strict';
const host = require('./host');

function streams() {
        return require('web-streams-polyfill');
}
function bufferModule() {
        const b = require('buffer/');
        const blob = require('./blob');
        return Object.assign({}, b, { Blob: blob.Blob, File: blob.File, atob: globalThis.atob, btoa: globalThis.btoa });
}
function streamModule() {
        const s = require('readable-stream');
        return s;
}
function assertModule() {
        return require('assert/');
}

const MODULES = {
        assert: assertModule,
        'assert/strict': () => assertModule().strict,
        buffer: bufferModule,
        events: () => require('events/'),
        path: () => require('path-browserify'),
        'path/posix': () => require('path-browserify'),
        process: () => host.process(),
        querystring: () => require('./querystring'),
        stream: streamModule,
        'stream/promises': () => streamModule().promises,
        'stream/web': () => {
                const w = streams(), t = require('./text-streams');
                return Object.assign({}, w, t);
        },
        string_decoder: () => require('string_decoder/'),
        timers: () => require('./timers').timers,
        'timers/promises': () => require('./timers').promises,
        url: () => require('./url'),
        util: () => require('./util'),
        'util/types': () => require('./util').types,
};

const GLOBALS = {
        Buffer: () => require('buffer/').Buffer,
        Event: () => require('./events-web').Event,
        EventTarget: () => require('./events-web').EventTarget,
        CustomEvent: () => require('./events-web').CustomEvent,
        Blob: () => require('./blob').Blob,
        File: () => require('./blob').File,
        FormData: () => require('./blob').FormData,
        TextEncoderStream: () => require('./text-streams').TextEncoderStream,
        TextDecoderStream: () => require('./text-streams').TextDecoderStream,
};
for (const n of ['ReadableStream', 'ReadableStreamDefaultReader', 'ReadableStreamBYOBReader', 'ReadableStreamBYOBRequest',
        'ReadableByteStreamController', 'ReadableStreamDefaultController', 'WritableStream', 'WritableStreamDefaultWriter',
        'WritableStreamDefaultController', 'TransformStream', 'TransformStreamDefaultController',
        'ByteLengthQueuingStrategy', 'CountQueuingStrategy'])
        GLOBALS[n] = () => streams()[n];

globalThis.__chidoriInstallNode = function (h) {
        Object.assign(host, h);
        const cache = Object.create(null);
        return {
                moduleNames: Object.keys(MODULES),
                globalNames: Object.keys(GLOBALS),
                module(name) {
                        if (!(name in cache))
                                cache[name] = MODULES[name]();
                        return cache[name];
                },
                global(name) {
                        return GLOBALS[name]();
                },
                fetchBody: (v, randomHex) => require('./blob').bodyOf(v, randomHex),
                parseForm: (bytes, type) => require('./blob').parseForm(bytes, type),
                streams,
        };
};
