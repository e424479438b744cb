// engine/node/text-streams.js — TextEncoderStream, TextDecoderStream
// (Encoding Standard) over the web-streams-polyfill TransformStream.
'use strict';
const { TransformStream } = require('web-streams-polyfill');

const pairs = new WeakMap();
function pair(v) {
        const p = pairs.get(v);
        if (!p)
                throw new TypeError('Illegal invocation');
        return p;
}

class TextEncoderStream {
        constructor() {
                const enc = new TextEncoder();
                let pending = '';  // a lone high surrogate at the end of a chunk
                const ts = new TransformStream({
                        transform(chunk, c) {
                                let s = pending + String(chunk);
                                pending = '';
                                const last = s.charCodeAt(s.length - 1);
                                if (last >= 0xd800 && last <= 0xdbff) {
                                        pending = s.slice(-1);
                                        s = s.slice(0, -1);
                                }
                                if (s)
                                        c.enqueue(enc.encode(s));
                        },
                        flush(c) {
                                if (pending)
                                        c.enqueue(new Uint8Array([0xef, 0xbf, 0xbd]));
                        },
                });
                pairs.set(this, { ts, encoding: 'utf-8' });
        }
        get encoding() { return pair(this).encoding; }
        get readable() { return pair(this).ts.readable; }
        get writable() { return pair(this).ts.writable; }
}
Object.defineProperty(TextEncoderStream.prototype, Symbol.toStringTag, { value: 'TextEncoderStream', configurable: true });

class TextDecoderStream {
        constructor(label = 'utf-8', options = undefined) {
                const dec = new TextDecoder(label, options);
                const ts = new TransformStream({
                        transform(chunk, c) {
                                if (!(chunk instanceof ArrayBuffer) && !ArrayBuffer.isView(chunk))
                                        throw new TypeError('TextDecoderStream: a chunk must be an ArrayBuffer or an ArrayBufferView');
                                const s = dec.decode(chunk, { stream: true });
                                if (s)
                                        c.enqueue(s);
                        },
                        flush(c) {
                                const s = dec.decode();
                                if (s)
                                        c.enqueue(s);
                        },
                });
                pairs.set(this, { ts, dec });
        }
        get encoding() { return pair(this).dec.encoding; }
        get fatal() { return pair(this).dec.fatal; }
        get ignoreBOM() { return pair(this).dec.ignoreBOM; }
        get readable() { return pair(this).ts.readable; }
        get writable() { return pair(this).ts.writable; }
}
Object.defineProperty(TextDecoderStream.prototype, Symbol.toStringTag, { value: 'TextDecoderStream', configurable: true });

module.exports = { TextEncoderStream, TextDecoderStream };
