/* engine/fetch.js - the WHATWG fetch surface of the engine worker.
 *
 * Evaluated after web.js and before prelude.js.  Defines one hidden global,
 * __chidoriInstallFetch(host); the prelude captures and deletes it, then
 * calls it once.  The call installs on globalThis (non-enumerable, writable,
 * configurable, like browsers): Headers, Request, Response, fetch, and
 * AbortController/AbortSignal when there are none yet.
 *
 * host.call(op, args) returns a promise (or thenable) for the host call's
 * value; it rejects with an Error carrying the parent's message.  The
 * transport is one call:
 *   op "http", args {url, method, headers: [[name, value], ...],
 *                    body_base64? (absent when the body is null),
 *                    redirect: "follow" | "error" | "manual"}
 *   value {status, statusText, url (final), redirected,
 *          headers: [[name, value], ...] (arrival order), body_base64}
 * host.setTimeout(fn, ms) (optional) backs AbortSignal.timeout(); without it
 * the global setTimeout of the moment is used.  host.callCancellable(op,
 * args) (optional) -> {promise, cancel()}: a fetch with a signal uses it, so
 * aborting stops the transfer in the parent (call.cancel), not only here.
 * host.surfaceBody(v) and host.parseForm(bytes, type) (optional, the
 * Node/Web surface's) make Blob/File/FormData bodies (FormData as
 * multipart/form-data) and Body#formData(); host.streams(load) (optional)
 * makes `body` a real ReadableStream and lets a ReadableStream be a body.
 *
 * The broker (effects/net/http.c) validates the request again and owns the
 * policy; the checks here only turn obvious misuse into an early TypeError
 * (bad method, bad header, body with GET/HEAD, relative URL).
 *
 * Deviations from the spec (docs/fetch.md has the list): bodies are
 * buffered bytes, and `body` is a minimal one-chunk ReadableStream stand-in
 * (getReader, async iteration, cancel) rather than a real ReadableStream;
 * no CORS (responses are "basic", a manual
 * redirect returns the 3xx itself, as undici does); data: URLs are answered
 * here, every other URL goes to the host.
 *
 * Intrinsics are captured when this file loads (web.js's classes when the
 * installer runs), so agent code that later replaces Array.prototype.push
 * or JSON.parse does not change how fetch behaves.
 */
'use strict';
{
const G = globalThis;
const O = Object;
const dp = O.defineProperty;
const gopd = O.getOwnPropertyDescriptor;
const getProto = O.getPrototypeOf;
const setProto = O.setPrototypeOf;
const ownKeys = Reflect.ownKeys;
const apply = Reflect.apply;
const StringC = String;
const NumberC = Number;
const fcc = String.fromCharCode;
const strLower = String.prototype.toLowerCase;
const strUpper = String.prototype.toUpperCase;
const strSlice = String.prototype.slice;
const strIndexOf = String.prototype.indexOf;
const PromiseC = Promise;
const promiseThen = Promise.prototype.then;
const promiseResolve = Promise.resolve;
const promiseReject = Promise.reject;
const TypeErrorC = TypeError;
const RangeErrorC = RangeError;
const jsonParse = JSON.parse;
const jsonStringify = JSON.stringify;
const isArray = Array.isArray;
const arrayPush = Array.prototype.push;
const arrayJoin = Array.prototype.join;
const arraySort = Array.prototype.sort;
const arraySplice = Array.prototype.splice;
const arraySlice = Array.prototype.slice;
const floor = Math.floor;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const isView = ArrayBuffer.isView;
const abByteLength = gopd(ArrayBuffer.prototype, 'byteLength').get;
const TAProto = getProto(Uint8Array.prototype);
const taBuffer = gopd(TAProto, 'buffer').get;
const taByteOffset = gopd(TAProto, 'byteOffset').get;
const taByteLength = gopd(TAProto, 'byteLength').get;
const dvBuffer = gopd(DataView.prototype, 'buffer').get;
const dvByteOffset = gopd(DataView.prototype, 'byteOffset').get;
const dvByteLength = gopd(DataView.prototype, 'byteLength').get;
const Uint8ArrayC = Uint8Array;
const Int8ArrayC = Int8Array;
const u8Slice = TAProto.slice;
const IteratorProto = getProto(getProto([][Symbol.iterator]()));
const AsyncIteratorProto = getProto(getProto(async function* () {}).prototype);
const symIterator = Symbol.iterator;
const symAsyncIterator = Symbol.asyncIterator;
const symToStringTag = Symbol.toStringTag;
// A microtask without web.js's queueMicrotask (web.js loads on first use).
function queueMicrotaskC(fn) {
        apply(promiseThen, apply(promiseResolve, PromiseC, []), [() => fn()]);
}

function define(o, k, v) {
        dp(o, k, { value: v, writable: true, enumerable: false, configurable: true });
}
function push(a, v) {
        apply(arrayPush, a, [v]);
}
function resolved(v) {
        return apply(promiseResolve, PromiseC, [v]);
}
function rejected(e) {
        return apply(promiseReject, PromiseC, [e]);
}
function then(p, f, r) {
        return apply(promiseThen, resolved(p), [f, r]);
}
// WebIDL DOMString / ByteString conversion: symbols throw (String() would not).
function str(v) {
        if (typeof v === 'symbol')
                throw new TypeErrorC('Cannot convert a Symbol value to a string');
        return StringC(v);
}
function lower(s) {
        return apply(strLower, s, []);
}
function need(n, k, what) {
        if (n < k)
                throw new TypeErrorC(what + ': ' + k + ' argument' + (k > 1 ? 's' : '') + ' required, but only ' + n + ' present.');
}
function isObject(v) {
        return v !== null && (typeof v === 'object' || typeof v === 'function');
}
function dict(v, what) {
        if (v === undefined || v === null)
                return {};
        if (!isObject(v))
                throw new TypeErrorC(what + ': the init argument must be an object');
        return v;
}
function oneOf(v, values, what) {
        const s = str(v);
        for (let i = 0; i < values.length; i++)
                if (values[i] === s)
                        return s;
        throw new TypeErrorC(what + ": '" + s + "' is not a valid value");
}
// Operations and attributes enumerable, a toStringTag: the WebIDL shape.
function webidl(C, tag) {
        for (const o of [C.prototype, C]) {
                const k = ownKeys(o);
                for (let i = 0; i < k.length; i++) {
                        if (k[i] === 'constructor' || k[i] === 'prototype' || k[i] === 'length' || k[i] === 'name')
                                continue;
                        const d = gopd(o, k[i]);
                        d.enumerable = typeof k[i] === 'string';
                        dp(o, k[i], d);
                }
        }
        dp(C.prototype, symToStringTag, { value: tag, configurable: true });
}

/* ------------------------------------------------------------------ bytes */

const EMPTY = new Uint8ArrayC(0);
function u8len(b) {
        return apply(taByteLength, b, []);
}
function copyBytes(b) {
        return apply(u8Slice, b, []);
}
// ArrayBuffer or ArrayBufferView -> a fresh Uint8Array copy; else null.
function bufferSourceBytes(v) {
        if (isView(v)) {
                let buf, off, len;
                try {
                        buf = apply(taBuffer, v, []);
                        off = apply(taByteOffset, v, []);
                        len = apply(taByteLength, v, []);
                } catch (e) {
                        buf = apply(dvBuffer, v, []);
                        off = apply(dvByteOffset, v, []);
                        len = apply(dvByteLength, v, []);
                }
                return copyBytes(new Uint8ArrayC(buf, off, len));
        }
        let n;
        try {
                n = apply(abByteLength, v, []);
        } catch (e) {
                return null;  // not an ArrayBuffer (SharedArrayBuffer included)
        }
        return n === 0 ? new Uint8ArrayC(0) : copyBytes(new Uint8ArrayC(v));
}

/* ------------------------------------------------------------------ base64
 * atob/btoa work on byte strings; these go straight between Uint8Array and
 * base64 text.  Encoding collects 8 Ki character codes in a plain array and
 * turns them into a string with one String.fromCharCode call (much faster
 * on JSC than applying it to a typed array); decoding indexes a 128-entry
 * table.  16 MiB each way take a few hundred milliseconds.
 */
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
let b64enc = null, b64dec = null;
function b64tables() {
        b64enc = new Uint8ArrayC(64);
        b64dec = new Int8ArrayC(128).fill(-1);
        for (let i = 0; i < 64; i++) {
                b64enc[i] = B64.charCodeAt(i);
                b64dec[b64enc[i]] = i;
        }
}
const CHUNK = 8192;  // a multiple of 4
function bytesToBase64(b) {
        if (b64enc === null)
                b64tables();
        const E = b64enc, n = b.length, parts = [];
        const codes = new Array(CHUNK);
        let i = 0, j = 0, v;
        for (; i + 2 < n; i += 3) {
                v = b[i] << 16 | b[i + 1] << 8 | b[i + 2];
                codes[j] = E[v >>> 18];
                codes[j + 1] = E[v >>> 12 & 63];
                codes[j + 2] = E[v >>> 6 & 63];
                codes[j + 3] = E[v & 63];
                if ((j += 4) === CHUNK) {
                        push(parts, apply(fcc, null, codes));
                        j = 0;
                }
        }
        if (i < n) {
                v = b[i] << 16 | (i + 1 < n ? b[i + 1] << 8 : 0);
                codes[j] = E[v >>> 18];
                codes[j + 1] = E[v >>> 12 & 63];
                codes[j + 2] = i + 1 < n ? E[v >>> 6 & 63] : 61;
                codes[j + 3] = 61;
                j += 4;
        }
        if (j > 0) {
                codes.length = j;
                push(parts, apply(fcc, null, codes));
        }
        return parts.length === 1 ? parts[0] : apply(arrayJoin, parts, ['']);
}
// Standard alphabet; '=' padding optional; no whitespace.  Throws TypeError.
function base64ToBytes(s) {
        if (b64dec === null)
                b64tables();
        const D = b64dec;
        let len = s.length;
        if (len % 4 === 0 && len > 0 && s.charCodeAt(len - 1) === 61)
                len -= s.charCodeAt(len - 2) === 61 ? 2 : 1;
        const rem = len % 4;
        if (rem === 1)
                throw new TypeErrorC('malformed base64');
        const out = new Uint8ArrayC((len >>> 2) * 3 + (rem ? rem - 1 : 0));
        let i = 0, j = 0, hi = 0, a, b, c, d, v;
        const full = len - rem;
        for (; i < full; i += 4) {
                a = s.charCodeAt(i);
                b = s.charCodeAt(i + 1);
                c = s.charCodeAt(i + 2);
                d = s.charCodeAt(i + 3);
                hi |= a | b | c | d;
                a = D[a & 127];
                b = D[b & 127];
                c = D[c & 127];
                d = D[d & 127];
                if ((a | b | c | d) < 0)
                        throw new TypeErrorC('malformed base64');
                v = a << 18 | b << 12 | c << 6 | d;
                out[j] = v >>> 16;
                out[j + 1] = v >>> 8 & 255;
                out[j + 2] = v & 255;
                j += 3;
        }
        if (rem) {
                a = s.charCodeAt(i);
                b = s.charCodeAt(i + 1);
                c = rem === 3 ? s.charCodeAt(i + 2) : 65;
                hi |= a | b | c;
                a = D[a & 127];
                b = D[b & 127];
                c = D[c & 127];
                if ((a | b | c) < 0)
                        throw new TypeErrorC('malformed base64');
                v = a << 18 | b << 12 | c << 6;
                out[j] = v >>> 16;
                if (rem === 3)
                        out[j + 1] = v >>> 8 & 255;
        }
        if (hi > 127)
                throw new TypeErrorC('malformed base64');
        return out;
}

/* ------------------------------------------------------------------ HTTP grammar */

// token = 1*tchar; tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" /
// "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
let tchar = null;
function isToken(s) {
        if (tchar === null) {
                tchar = new Uint8ArrayC(128);
                const extra = "!#$%&'*+-.^_`|~";
                for (let i = 0; i < extra.length; i++)
                        tchar[extra.charCodeAt(i)] = 1;
                for (let c = 48; c < 58; c++)
                        tchar[c] = 1;
                for (let c = 65; c < 91; c++)
                        tchar[c] = tchar[c + 32] = 1;
        }
        if (s.length === 0)
                return false;
        for (let i = 0; i < s.length; i++) {
                const c = s.charCodeAt(i);
                if (c > 127 || !tchar[c])
                        return false;
        }
        return true;
}
function isHttpSpace(c) {
        return c === 9 || c === 10 || c === 13 || c === 32;
}
function headerName(v, what) {
        const s = str(v);
        if (!isToken(s))
                throw new TypeErrorC(what + ': "' + s + '" is an invalid header name.');
        return s;
}
// Normalize (strip leading and trailing HTTP whitespace), then refuse NUL,
// CR, LF and anything that is not a byte (ByteString).
function headerValue(v, what) {
        let s = str(v), a = 0, b = s.length;
        while (a < b && isHttpSpace(s.charCodeAt(a)))
                a++;
        while (b > a && isHttpSpace(s.charCodeAt(b - 1)))
                b--;
        if (a !== 0 || b !== s.length)
                s = apply(strSlice, s, [a, b]);
        for (let i = 0; i < s.length; i++) {
                const c = s.charCodeAt(i);
                if (c === 0 || c === 10 || c === 13 || c > 255)
                        throw new TypeErrorC(what + ': "' + s + '" is an invalid header value.');
        }
        return s;
}
// Byte-lowercase: only A-Z change (header names from the host may hold
// other bytes, which toLowerCase would map too).
function byteLower(s) {
        for (let i = 0; i < s.length; i++) {
                const c = s.charCodeAt(i);
                if (c > 127)
                        return manualLower(s);
        }
        return lower(s);
}
function manualLower(s) {
        let o = '';
        for (let i = 0; i < s.length; i++) {
                const c = s.charCodeAt(i);
                o += c >= 65 && c <= 90 ? fcc(c + 32) : s[i];
        }
        return o;
}
function byteUpper(s) {
        for (let i = 0; i < s.length; i++)
                if (s.charCodeAt(i) > 127)
                        return s;  // not a token: left as is, refused later
        return apply(strUpper, s, []);
}
// reason-phrase = *( HTAB / SP / VCHAR / obs-text )
function isReasonPhrase(s) {
        for (let i = 0; i < s.length; i++) {
                const c = s.charCodeAt(i);
                if (!(c === 9 || (c >= 32 && c !== 127 && c <= 255)))
                        return false;
        }
        return true;
}
const NULL_BODY_STATUS = { 101: 1, 103: 1, 204: 1, 205: 1, 304: 1 };
const REDIRECT_STATUS = { 301: 1, 302: 1, 303: 1, 307: 1, 308: 1 };
const NORMALIZED_METHODS = { DELETE: 1, GET: 1, HEAD: 1, OPTIONS: 1, POST: 1, PUT: 1 };
const FORBIDDEN_METHODS = { CONNECT: 1, TRACE: 1, TRACK: 1 };
// WebIDL unsigned short.
function toUShort(v) {
        let n = NumberC(v);
        if (n !== n || n === Infinity || n === -Infinity)
                return 0;
        n = n < 0 ? -floor(-n) : floor(n);
        n %= 65536;
        return n < 0 ? n + 65536 : n;
}

/* ------------------------------------------------------------------ web.js and the host
 * Set by installFetch: web.js's classes, captured when the installer runs,
 * and the host's functions.
 */
let host = null, hostCall = null, hostSetTimeout = null;
// Optional (the prelude's): surfaceBody(v) -> {bytes, type} | null for a
// Blob or FormData body; parseForm(bytes, contentType) -> FormData.
let hostSurfaceBody = null, hostParseForm = null;
let TextEncoderC, TextDecoderC, URLC, URLSearchParamsC, DOMExceptionC, AbortControllerC;
let uspToString, urlHref, urlProtocol, urlUsername, urlPassword;
let encoder = null, teEncode, decoder = null, tdDecode;

// The coders are made on first use: building a TextDecoder costs web.js a
// label table, which a run that never fetches should not pay for.
function utf8(s) {
        if (encoder === null)
                encoder = new TextEncoderC();
        return apply(teEncode, encoder, [s]);
}
function utf8Decode(b) {
        if (decoder === null)
                decoder = new TextDecoderC('utf-8');
        return apply(tdDecode, decoder, [b]);  // replaces bad sequences, drops a BOM
}
function abortError() {
        return new DOMExceptionC('This operation was aborted', 'AbortError');
}
// Parse an absolute URL (there is no base to resolve against).
function parseURL(input, what) {
        const s = str(input);
        try {
                return new URLC(s);
        } catch (e) {
                throw new TypeErrorC(what + ': Failed to parse URL from ' + s, { cause: e });
        }
}

/* ------------------------------------------------------------------ AbortController, AbortSignal */

// Minimal: the 'abort' event, onabort, throwIfAborted, abort/any/timeout.
// Listener exceptions are reported (thrown from a microtask), not
// propagated to the caller of abort().
function makeAbort() {
        let constructing = false;
        let signalAbort;
        function report(e) {
                queueMicrotaskC(() => {
                        throw e;
                });
        }
        function listenerOptions(options) {
                if (isObject(options))
                        return { capture: !!options.capture, once: !!options.once, signal: options.signal };
                return { capture: !!options, once: false, signal: undefined };
        }
        function makeEvent(type, target) {
                let stop = false;
                const ev = {
                        type, target, currentTarget: target, srcElement: target, eventPhase: 2,
                        bubbles: false, cancelable: false, composed: false, defaultPrevented: false,
                        isTrusted: true, timeStamp: 0, returnValue: true, cancelBubble: false,
                        preventDefault() {},
                        stopPropagation() {},
                        stopImmediatePropagation() {
                                stop = true;
                        },
                        composedPath() {
                                return [target];
                        },
                };
                return { ev, stopped: () => stop };
        }
        class AbortSignal {
                #aborted = false;
                #reason = undefined;
                #listeners = [];
                #onabort = null;
                constructor() {
                        if (!constructing)
                                throw new TypeErrorC('Illegal constructor');
                        constructing = false;
                }
                get aborted() {
                        return this.#aborted;
                }
                get reason() {
                        return this.#reason;
                }
                throwIfAborted() {
                        if (this.#aborted)
                                throw this.#reason;
                }
                get onabort() {
                        return this.#onabort;
                }
                set onabort(f) {
                        this.#onabort = typeof f === 'function' || isObject(f) ? f : null;
                }
                addEventListener(type, listener, options = undefined) {
                        need(arguments.length, 2, "Failed to execute 'addEventListener' on 'EventTarget'");
                        const list = this.#listeners;
                        if (listener === null || listener === undefined)
                                return;
                        const o = listenerOptions(options);
                        type = str(type);
                        if (o.signal !== undefined && o.signal !== null && o.signal.aborted)
                                return;
                        for (let i = 0; i < list.length; i++)
                                if (list[i].type === type && list[i].callback === listener && list[i].capture === o.capture)
                                        return;
                        const entry = { type, callback: listener, capture: o.capture, once: o.once, removed: false };
                        push(list, entry);
                        if (o.signal !== undefined && o.signal !== null)
                                o.signal.addEventListener('abort', () => this.#remove(entry));
                }
                removeEventListener(type, listener, options = undefined) {
                        need(arguments.length, 2, "Failed to execute 'removeEventListener' on 'EventTarget'");
                        const capture = listenerOptions(options).capture, list = this.#listeners;
                        type = str(type);
                        for (let i = 0; i < list.length; i++)
                                if (list[i].type === type && list[i].callback === listener && list[i].capture === capture)
                                        return this.#remove(list[i]);
                }
                #remove(entry) {
                        const list = this.#listeners;
                        entry.removed = true;
                        for (let i = 0; i < list.length; i++)
                                if (list[i] === entry)
                                        return void apply(arraySplice, list, [i, 1]);
                }
                dispatchEvent(event) {
                        if (!isObject(event))
                                throw new TypeErrorC("Failed to execute 'dispatchEvent' on 'EventTarget': parameter 1 is not of type 'Event'.");
                        this.#fire(event, () => false);
                        return true;
                }
                #fire(ev, stopped) {
                        const type = ev.type;
                        if (type === 'abort' && this.#onabort !== null)
                                call(this.#onabort, this, ev);
                        const list = apply(arraySlice, this.#listeners, []);
                        for (let i = 0; i < list.length && !stopped(); i++) {
                                const l = list[i];
                                if (l.type !== type || l.removed)
                                        continue;
                                if (l.once)
                                        this.#remove(l);
                                call(l.callback, this, ev);
                        }
                }
                #abort(reason) {
                        if (this.#aborted)
                                return;
                        this.#aborted = true;
                        this.#reason = reason === undefined ? abortError() : reason;
                        const { ev, stopped } = makeEvent('abort', this);
                        this.#fire(ev, stopped);
                }
                static abort(reason = undefined) {
                        const s = newSignal();
                        s.#abort(reason);
                        return s;
                }
                static any(signals) {
                        need(arguments.length, 1, "Failed to execute 'any' on 'AbortSignal'");
                        const s = newSignal(), list = [];
                        for (const x of signals) {
                                if (!isObject(x) || typeof x.addEventListener !== 'function')
                                        throw new TypeErrorC("Failed to execute 'any' on 'AbortSignal': Failed to convert value to 'AbortSignal'.");
                                push(list, x);
                        }
                        for (let i = 0; i < list.length; i++) {
                                if (list[i].aborted) {
                                        s.#abort(list[i].reason);
                                        return s;
                                }
                        }
                        for (let i = 0; i < list.length; i++) {
                                const x = list[i];
                                x.addEventListener('abort', () => s.#abort(x.reason), { once: true });
                        }
                        return s;
                }
                static timeout(ms) {
                        need(arguments.length, 1, "Failed to execute 'timeout' on 'AbortSignal'");
                        const n = NumberC(ms);
                        if (n !== n || n < 0 || n === Infinity || n > MAX_SAFE)
                                throw new TypeErrorC("Failed to execute 'timeout' on 'AbortSignal': Value is outside the 'unsigned long long' value range.");
                        const s = newSignal();
                        const st = hostSetTimeout || G.setTimeout;
                        if (typeof st !== 'function')
                                throw new TypeErrorC('AbortSignal.timeout: no timers in this context');
                        apply(st, undefined, [() => s.#abort(new DOMExceptionC('The operation timed out.', 'TimeoutError')), floor(n)]);
                        return s;
                }
                static {
                        signalAbort = (s, reason) => s.#abort(reason);
                }
        }
        function call(f, self, ev) {
                try {
                        if (typeof f === 'function')
                                apply(f, self, [ev]);
                        else if (isObject(f) && typeof f.handleEvent === 'function')
                                apply(f.handleEvent, f, [ev]);
                } catch (e) {
                        report(e);
                }
        }
        webidl(AbortSignal, 'AbortSignal');
        function newSignal() {
                constructing = true;
                return new AbortSignal();
        }
        class AbortController {
                #signal;
                constructor() {
                        this.#signal = newSignal();
                }
                get signal() {
                        return this.#signal;
                }
                abort(reason = undefined) {
                        signalAbort(this.#signal, reason);
                }
        }
        webidl(AbortController, 'AbortController');
        return { AbortController, AbortSignal };
}

const OwnAbort = makeAbort();

function isSignal(v) {
        return isObject(v) && 'aborted' in v && typeof v.addEventListener === 'function';
}
function abortReason(signal) {
        const r = signal.reason;
        return r === undefined ? abortError() : r;
}
// A new signal that aborts when `src` does (null: never).
function followSignal(src) {
        const c = new AbortControllerC();
        if (src !== null) {
                if (src.aborted)
                        c.abort(abortReason(src));
                else
                        src.addEventListener('abort', () => c.abort(abortReason(src)), { once: true });
        }
        return c.signal;
}

/* ------------------------------------------------------------------ Headers */

const GUARD_NONE = 0, GUARD_IMMUTABLE = 1;
let headersState;

class Headers {
        // list: [lower-case name, name as given, value] in insertion order;
        // sorted: the sort-and-combine result, dropped on every change.
        #s = { list: [], guard: GUARD_NONE, sorted: null };
        constructor(init = undefined) {
                if (init !== undefined)
                        fillHeaders(this, init, "Failed to construct 'Headers'");
        }
        append(name, value) {
                const s = this.#s;
                need(arguments.length, 2, "Failed to execute 'append' on 'Headers'");
                name = headerName(name, 'Headers.append');
                value = headerValue(value, 'Headers.append');
                mutable(s);
                appendRaw(s, name, value);
        }
        delete(name) {
                const s = this.#s;
                need(arguments.length, 1, "Failed to execute 'delete' on 'Headers'");
                const k = byteLower(headerName(name, 'Headers.delete'));
                mutable(s);
                removeAll(s, k);
        }
        get(name) {
                const s = this.#s;
                need(arguments.length, 1, "Failed to execute 'get' on 'Headers'");
                return getCombined(s, byteLower(headerName(name, 'Headers.get')));
        }
        getSetCookie() {
                const l = this.#s.list, out = [];
                for (let i = 0; i < l.length; i++)
                        if (l[i][0] === 'set-cookie')
                                push(out, l[i][2]);
                return out;
        }
        has(name) {
                const s = this.#s;
                need(arguments.length, 1, "Failed to execute 'has' on 'Headers'");
                return indexOf(s, byteLower(headerName(name, 'Headers.has'))) >= 0;
        }
        set(name, value) {
                const s = this.#s;
                need(arguments.length, 2, "Failed to execute 'set' on 'Headers'");
                name = headerName(name, 'Headers.set');
                value = headerValue(value, 'Headers.set');
                mutable(s);
                const k = byteLower(name), i = indexOf(s, k);
                if (i < 0)
                        return appendRaw(s, name, value);
                s.list[i][2] = value;
                s.sorted = null;
                removeAll(s, k, i + 1);
        }
        forEach(callback, thisArg = undefined) {
                const s = this.#s;
                need(arguments.length, 1, "Failed to execute 'forEach' on 'Headers'");
                if (typeof callback !== 'function')
                        throw new TypeErrorC("Failed to execute 'forEach' on 'Headers': parameter 1 is not of type 'Function'.");
                for (let i = 0; i < sorted(s).length; i++) {
                        const p = sorted(s)[i];
                        apply(callback, thisArg, [p[1], p[0], this]);
                }
        }
        keys() {
                return new HeadersIterator(this.#s, 0);
        }
        values() {
                return new HeadersIterator(this.#s, 1);
        }
        entries() {
                return new HeadersIterator(this.#s, 2);
        }
        static {
                headersState = (h) => h.#s;
        }
}
function mutable(s) {
        if (s.guard === GUARD_IMMUTABLE)
                throw new TypeErrorC('Headers are immutable');
}
function appendRaw(s, name, value) {
        push(s.list, [byteLower(name), name, value]);
        s.sorted = null;
}
function indexOf(s, k) {
        const l = s.list;
        for (let i = 0; i < l.length; i++)
                if (l[i][0] === k)
                        return i;
        return -1;
}
function removeAll(s, k, from = 0) {
        const l = s.list;
        let j = from;
        for (let i = from; i < l.length; i++)
                if (l[i][0] !== k)
                        l[j++] = l[i];
        if (j !== l.length) {
                l.length = j;
                s.sorted = null;
        }
}
function getCombined(s, k) {
        const l = s.list;
        let v = null;
        for (let i = 0; i < l.length; i++)
                if (l[i][0] === k)
                        v = v === null ? l[i][2] : v + ', ' + l[i][2];
        return v;
}
// Sort and combine: lower-case names in code unit order, values of one
// name joined with ", " - except set-cookie, one entry per header.
function sorted(s) {
        if (s.sorted !== null)
                return s.sorted;
        const l = s.list, names = [], seen = { __proto__: null }, out = [];
        for (let i = 0; i < l.length; i++) {
                if (seen[l[i][0]] === undefined) {
                        seen[l[i][0]] = 1;
                        push(names, l[i][0]);
                }
        }
        apply(arraySort, names, [(a, b) => (a < b ? -1 : a > b ? 1 : 0)]);
        for (let i = 0; i < names.length; i++) {
                const k = names[i];
                if (k === 'set-cookie') {
                        for (let j = 0; j < l.length; j++)
                                if (l[j][0] === k)
                                        push(out, [k, l[j][2]]);
                } else {
                        push(out, [k, getCombined(s, k)]);
                }
        }
        return (s.sorted = out);
}
function fillHeaders(h, init, what) {
        const s = headersState(h);
        if (!isObject(init))
                throw new TypeErrorC(what + ": The provided value is not of type '(record<ByteString, ByteString> or sequence<sequence<ByteString>>)'.");
        let from = null;
        try {
                from = headersState(init);
        } catch (e) {
                // not one of ours: a sequence or a record
        }
        if (from) {
                const l = from.list;
                for (let i = 0; i < l.length; i++)
                        appendRaw(s, l[i][1], l[i][2]);
                return;
        }
        const iter = init[symIterator];
        if (iter !== undefined && iter !== null) {
                if (typeof iter !== 'function')
                        throw new TypeErrorC(what + ': The object must have a callable @@iterator property.');
                const pairs = [];
                for (const pair of { [symIterator]: () => apply(iter, init, []) }) {
                        if (!isObject(pair))
                                throw new TypeErrorC(what + ': The provided value cannot be converted to a sequence.');
                        const p = [];
                        for (const x of pair)
                                push(p, x);
                        if (p.length !== 2)
                                throw new TypeErrorC(what + ': Invalid header pair: each pair must contain exactly two items.');
                        push(pairs, p);
                }
                for (let i = 0; i < pairs.length; i++)
                        appendRaw(s, headerName(pairs[i][0], what), headerValue(pairs[i][1], what));
                return;
        }
        const keys = ownKeys(init);
        for (let i = 0; i < keys.length; i++) {
                const k = keys[i];
                const d = gopd(init, k);
                if (d === undefined || !d.enumerable)
                        continue;
                if (typeof k === 'symbol')
                        throw new TypeErrorC(what + ': header names must be strings');
                appendRaw(s, headerName(k, what), headerValue(init[k], what));
        }
}
function defaultContentType(h, type) {
        const s = headersState(h);
        if (type !== null && indexOf(s, 'content-type') < 0)
                appendRaw(s, 'Content-Type', type);
}
function newHeaders(guard) {
        const h = new Headers();
        headersState(h).guard = guard;
        return h;
}
function copyHeaders(from) {
        const h = new Headers(), s = headersState(h), f = headersState(from), l = f.list;
        for (let i = 0; i < l.length; i++)
                push(s.list, [l[i][0], l[i][1], l[i][2]]);
        s.guard = f.guard;
        return h;
}
webidl(Headers, 'Headers');
define(Headers.prototype, symIterator, Headers.prototype.entries);

class HeadersIterator {
        #s;
        #kind;
        #i = 0;
        constructor(s, kind) {
                this.#s = s;
                this.#kind = kind;
        }
        next() {
                const pairs = sorted(this.#s);
                if (this.#i >= pairs.length)
                        return { value: undefined, done: true };
                const p = pairs[this.#i++];
                return { value: this.#kind === 0 ? p[0] : this.#kind === 1 ? p[1] : [p[0], p[1]], done: false };
        }
}
setProto(HeadersIterator.prototype, IteratorProto);
delete HeadersIterator.prototype.constructor;
webidl(HeadersIterator, 'Headers Iterator');

/* ------------------------------------------------------------------ bodies */

// A body: bytes (never mutated once made, so clones share them),
// used (the stream is disturbed: bodyUsed), drained (its one chunk
// is gone), stream (made on the first `body` read).  A null body is
// `null`, not one of these.
//
// With the Node/Web surface (host.streams), `body` is a real ReadableStream
// (a byte stream) over the body's bytes, handed out in chunks of at most
// BODY_CHUNK bytes as it is read; and a ReadableStream the agent made can be
// a body: `source`, read to the end when the body is consumed (bytes stays
// null until then).
function makeBody(bytes) {
        return { bytes, used: false, drained: false, stream: null, reader: null, onDrain: null, source: null, real: false };
}
function sourceBody(stream) {
        const b = makeBody(null);
        b.source = b.stream = stream;
        b.real = true;
        return b;
}
function locked(b) {
        return b.reader !== null || (b.real && b.stream !== null && b.stream.locked);
}
// host.streams(load): the surface's stream classes (web-streams-polyfill),
// loading the surface when `load`, else null while it is not loaded; null
// without a surface (the one-chunk stand-in below is used).
let hostStreamsFn = null;
function streamsApi(load) {
        return hostStreamsFn === null ? null : hostStreamsFn(load);
}
const realStreamBody = new WeakMap();  // a body's ReadableStream -> the body
const BODY_CHUNK = 65536;
const u8SetC = getProto(Uint8Array.prototype).set;
/* The body as a ReadableStream.  The pull below hands out b.bytes; a host
 * call that delivers a response body piece by piece (the runtime's event
 * loop, issue 18 item 1) would keep the body open instead: an array of
 * chunks plus done/error, pushed into here with controller.enqueue() as
 * each arrives, and consume() waiting for done. */
function realStream(b, RS) {
        let off = 0;
        const st = new RS({
                type: 'bytes',
                pull(c) {
                        b.used = true;
                        const n = b.drained ? 0 : u8len(b.bytes) - off;
                        if (n <= 0) {
                                drain(b);
                                c.close();
                                return;
                        }
                        const k = n < BODY_CHUNK ? n : BODY_CHUNK;
                        c.enqueue(copyBytes(b.bytes.subarray(off, off + k)));
                        off += k;
                        if (off >= u8len(b.bytes)) {
                                drain(b);
                                c.close();
                        }
                },
                cancel() {
                        b.used = true;
                        drain(b);
                },
        });
        realStreamBody.set(st, b);
        return st;
}
// Read a ReadableStream to its end: its bytes (chunks must be bytes).
function collect(stream) {
        const reader = stream.getReader();
        const parts = [];
        let n = 0;
        const step = () => then(reader.read(), (r) => {
                if (r.done) {
                        const out = new Uint8ArrayC(n);
                        let o = 0;
                        for (let i = 0; i < parts.length; i++) {
                                apply(u8SetC, out, [parts[i], o]);
                                o += u8len(parts[i]);
                        }
                        return out;
                }
                const c = bufferSourceBytes(r.value);
                if (c === null)
                        throw new TypeErrorC('a ReadableStream body must give Uint8Array chunks, got ' + typeof r.value);
                push(parts, c);
                n += u8len(c);
                return step();
        });
        return step();
}
/* A body the parent streams (issue 18): the response's head came with
 * "stream": id, its bytes come through http.read {stream} calls as the
 * server sends them (the parent buffers at most 1 MiB per stream and pauses
 * the transfer while it is full).  text() & co read it to the end without
 * a stream object; `body` is a ReadableStream whose pull is one read. */
function hostStreamBody(id) {
        const b = makeBody(null);
        b.hostStream = id;
        b.hostDone = false;  // read to the end, or given up (http.close)
        b.aborted = null;    // the fetch's signal aborted: its reason
        return b;
}
function hostPull(b) {
        if (b.aborted !== null)
                return rejected(b.aborted);
        return then(apply(hostCall, host, ['http.read', { stream: b.hostStream }]), (v) => {
                if (b.aborted !== null)
                        throw b.aborted;
                if (!isObject(v))
                        throw malformed('http.read: not an object');
                const d = v.data_base64;
                const bytes = d === undefined || d === null ? EMPTY : base64ToBytes(str(d));
                if (v.done === true)
                        b.hostDone = true;
                return { bytes, done: v.done === true };
        }, (e) => {
                b.hostDone = true;
                throw b.aborted !== null ? b.aborted : fetchFailed(e);
        });
}
function hostCloseId(id) {
        then(apply(hostCall, host, ['http.close', { stream: id }]), undefined, () => {});
}
function hostClose(b) {
        if (b.hostDone)
                return;
        b.hostDone = true;
        hostCloseId(b.hostStream);
}
function collectHost(b) {
        const parts = [];
        let n = 0;
        const step = () => then(hostPull(b), (r) => {
                if (u8len(r.bytes) > 0) {
                        push(parts, r.bytes);
                        n += u8len(r.bytes);
                }
                if (!r.done)
                        return step();
                const out = new Uint8ArrayC(n);
                let o = 0;
                for (let i = 0; i < parts.length; i++) {
                        apply(u8SetC, out, [parts[i], o]);
                        o += u8len(parts[i]);
                }
                return out;
        });
        return step();
}
function hostStream(b, RS) {
        const st = new RS({
                type: 'bytes',
                pull(c) {
                        b.used = true;
                        return then(hostPull(b), (r) => {
                                if (u8len(r.bytes) > 0)
                                        c.enqueue(r.bytes);
                                if (r.done) {
                                        drain(b);
                                        c.close();
                                }
                        });
                },
                cancel() {
                        b.used = true;
                        drain(b);
                        hostClose(b);
                },
        });
        b.real = true;
        b.source = b.stream = st;
        realStreamBody.set(st, b);
        return st;
}
function hostStreamNow(b) {
        if (b.source === null && b.hostStream !== undefined)
                hostStream(b, streamsApi(true).ReadableStream);
}

// Extract a body: {bytes, type} (type may be null).
function extractBody(v) {
        if (typeof v === 'string')
                return { bytes: utf8(v), type: 'text/plain;charset=UTF-8' };
        if (isObject(v)) {
                if (v instanceof URLSearchParamsC)
                        return { bytes: utf8(apply(uspToString, v, [])), type: 'application/x-www-form-urlencoded;charset=UTF-8' };
                const b = bufferSourceBytes(v);
                if (b !== null)
                        return { bytes: b, type: null };
                const sb = hostSurfaceBody === null ? null : hostSurfaceBody(v);
                if (sb !== null)
                        return sb;
                const rb = realStreamBody.get(v);
                if (rb !== undefined) {
                        if (rb.used || locked(rb) || (rb.source !== null && rb.stream._disturbed))
                                throw new TypeErrorC('Response body object should not be disturbed or locked');
                        if (rb.source !== null)
                                return { bytes: null, type: null, source: rb.source };
                        rb.used = rb.drained = true;
                        return { bytes: rb.bytes, type: null };
                }
                const sa = streamsApi(false);
                if (sa !== null && v instanceof sa.ReadableStream) {
                        if (v.locked || v._disturbed)
                                throw new TypeErrorC('Response body object should not be disturbed or locked');
                        return { bytes: null, type: null, source: v };
                }
                const st = streamBody(v);
                if (st !== null) {
                        if (st.used || locked(st))
                                throw new TypeErrorC('Response body object should not be disturbed or locked');
                        st.used = st.drained = true;
                        return { bytes: st.bytes, type: null };
                }
        }
        return { bytes: utf8(str(v)), type: 'text/plain;charset=UTF-8' };
}
function unusable(b) {
        return b !== null && (b.used || locked(b));
}
// The body mixin's reads.  The body is marked used at once (bodyUsed
// is true as soon as text() returns); the promise settles later.
function consume(getBody, self, kind) {
        let b;
        try {
                b = getBody(self);
                if (b !== null) {
                        if (b.used)
                                throw new TypeErrorC('Body is unusable: Body has already been read');
                        if (locked(b))
                                throw new TypeErrorC('Body is unusable: Body is locked');
                        b.used = b.drained = true;
                }
        } catch (e) {
                return rejected(e);
        }
        if (b !== null && b.bytes === null) {
                const src = b.source;
                b.source = null;
                return then(src === null && b.hostStream !== undefined ? collectHost(b) : collect(src), (bytes) => {
                        b.bytes = bytes;
                        drain(b);
                        return consumed(bytes, kind, self);
                });
        }
        if (b !== null && b.real && b.stream !== null)
                b.stream.cancel();  // read through text() & co: the stream is done too
        const bytes = b === null ? EMPTY : b.bytes;
        return then(undefined, () => consumed(bytes, kind, self));
}
function consumed(bytes, kind, self) {
        {
                switch (kind) {
                case 'text':
                        return utf8Decode(bytes);
                case 'json':
                        return jsonParse(utf8Decode(bytes));
                case 'arrayBuffer':
                        return apply(taBuffer, copyBytes(bytes), []);
                case 'bytes':
                        return copyBytes(bytes);
                case 'blob':
                        if (typeof G.Blob === 'function')
                                return new G.Blob([copyBytes(bytes)], { type: contentType(self) });
                        throw new TypeErrorC('Body.blob: Blob is not available in chidori');
                default:
                        if (hostParseForm !== null)
                                return hostParseForm(copyBytes(bytes), contentType(self));
                        throw new TypeErrorC('Body.formData: FormData is not available in chidori');
                }
        }
}
let contentType = null;
function mixBody(C, getBody) {
        const p = C.prototype;
        const methods = {
                text() {
                        return consume(getBody, this, 'text');
                },
                json() {
                        return consume(getBody, this, 'json');
                },
                arrayBuffer() {
                        return consume(getBody, this, 'arrayBuffer');
                },
                bytes() {
                        return consume(getBody, this, 'bytes');
                },
                blob() {
                        return consume(getBody, this, 'blob');
                },
                formData() {
                        return consume(getBody, this, 'formData');
                },
        };
        for (const k of ownKeys(methods))
                define(p, k, methods[k]);
        const getters = {
                get body() {
                        const b = getBody(this);
                        if (b === null)
                                return null;
                        if (b.stream === null && b.hostStream !== undefined) {
                                hostStreamNow(b);
                        } else if (b.stream === null) {
                                const sa = streamsApi(true);
                                const RS = sa === null ? null : sa.ReadableStream;
                                b.real = RS !== null;
                                b.stream = RS !== null ? realStream(b, RS) : new ReadableStream(b);
                        }
                        return b.stream;
                },
                get bodyUsed() {
                        const b = getBody(this);
                        return b !== null && (b.used || (b.real && b.stream !== null && b.stream._disturbed === true));
                },
        };
        for (const k of ownKeys(getters))
                dp(p, k, { get: gopd(getters, k).get, configurable: true });
}

/* ------------------------------------------------------------------ the body "stream"
 * Not a ReadableStream: the bytes are all here already, so it hands
 * them out as one chunk.  Enough for getReader().read() loops and
 * `for await (const chunk of res.body)`.
 */
let streamBody;
class ReadableStream {
        #b;
        constructor(b) {
                this.#b = b;
        }
        get locked() {
                return locked(this.#b);
        }
        getReader(options = undefined) {
                const b = this.#b;
                if (isObject(options) && options.mode !== undefined)
                        throw new TypeErrorC("ReadableStream.getReader: mode '" + str(options.mode) + "' is not supported");
                if (locked(b))
                        throw new TypeErrorC('ReadableStream.getReader: the stream is locked');
                return (b.reader = new ReadableStreamDefaultReader(b));
        }
        cancel(reason = undefined) {
                const b = this.#b;
                if (locked(b))
                        return rejected(new TypeErrorC('ReadableStream.cancel: the stream is locked'));
                b.used = true;
                drain(b);
                return resolved(undefined);
        }
        values(options = undefined) {
                const preventCancel = isObject(options) && !!options.preventCancel;
                const b = this.#b;
                const reader = this.getReader();
                let done = false;
                const it = {
                        next() {
                                if (done)
                                        return resolved({ value: undefined, done: true });
                                const r = readBody(b);
                                if (r.done) {
                                        done = true;
                                        reader.releaseLock();
                                }
                                return resolved(r);
                        },
                        return(value) {
                                if (!done) {
                                        done = true;
                                        if (!preventCancel) {
                                                b.used = true;
                                                drain(b);
                                        }
                                        reader.releaseLock();
                                }
                                return resolved({ value, done: true });
                        },
                };
                setProto(it, AsyncIteratorProto);
                return it;
        }
        static {
                streamBody = (v) => {
                        try {
                                return v.#b;
                        } catch (e) {
                                return null;
                        }
                };
        }
}
define(ReadableStream.prototype, symAsyncIterator, ReadableStream.prototype.values);
delete ReadableStream.prototype.constructor;
webidl(ReadableStream, 'ReadableStream');

class ReadableStreamDefaultReader {
        #b;
        #closed;
        constructor(b) {
                this.#b = b;
                this.#closed = null;
        }
        get closed() {
                if (this.#closed === null) {
                        const b = this.#b;
                        this.#closed = b === null || b.drained ? resolved(undefined) : new PromiseC((res) => {
                                push(b.onDrain || (b.onDrain = []), res);
                        });
                }
                return this.#closed;
        }
        read() {
                const b = this.#b;
                if (b === null)
                        return rejected(new TypeErrorC('ReadableStreamDefaultReader.read: the reader was released'));
                return resolved(readBody(b));
        }
        releaseLock() {
                const b = this.#b;
                if (b !== null && b.reader === this)
                        b.reader = null;
                this.#b = null;
        }
        cancel(reason = undefined) {
                const b = this.#b;
                if (b === null)
                        return rejected(new TypeErrorC('ReadableStreamDefaultReader.cancel: the reader was released'));
                b.used = true;
                drain(b);
                return resolved(undefined);
        }
}
// A clone of a body for Request#clone / Response#clone: the same bytes, or
// for a ReadableStream body, the two branches of its tee.
function cloneBody(b) {
        if (b === null)
                return null;
        if (b.bytes !== null)
                return makeBody(b.bytes);
        hostStreamNow(b);
        const t = b.source.tee();
        b.source = b.stream = t[0];
        realStreamBody.set(t[0], b);
        const c = sourceBody(t[1]);
        realStreamBody.set(t[1], c);
        return c;
}
function readBody(b) {
        b.used = true;
        if (b.drained || u8len(b.bytes) === 0) {
                drain(b);
                return { value: undefined, done: true };
        }
        drain(b);
        return { value: copyBytes(b.bytes), done: false };
}
function drain(b) {
        b.drained = true;
        const waiting = b.onDrain;
        if (waiting) {
                b.onDrain = null;
                for (let i = 0; i < waiting.length; i++)
                        waiting[i](undefined);
        }
}
delete ReadableStreamDefaultReader.prototype.constructor;
webidl(ReadableStreamDefaultReader, 'ReadableStreamDefaultReader');

/* ------------------------------------------------------------------ Request */

let requestState, newRequestFromState = null;
const MODES = ['same-origin', 'no-cors', 'cors', 'navigate'];
const CREDENTIALS = ['omit', 'same-origin', 'include'];
const CACHES = ['default', 'no-store', 'reload', 'no-cache', 'force-cache', 'only-if-cached'];
const REDIRECTS = ['follow', 'error', 'manual'];
const POLICIES = ['', 'no-referrer', 'no-referrer-when-downgrade', 'same-origin', 'origin', 'strict-origin',
        'origin-when-cross-origin', 'strict-origin-when-cross-origin', 'unsafe-url'];

function normalizeMethod(v, what) {
        const m = str(v);
        if (!isToken(m))
                throw new TypeErrorC(what + ": '" + m + "' is not a valid HTTP method.");
        const up = byteUpper(m);
        if (FORBIDDEN_METHODS[up] === 1)
                throw new TypeErrorC(what + ": '" + m + "' HTTP method is unsupported.");
        return NORMALIZED_METHODS[up] === 1 ? up : m;
}

// The request state: what Request's getters read, and what fetch
// sends.  `signal` is the signal given (or inherited), null for
// none; the Request's own `signal` follows it and is made lazily.
function buildRequest(input, init) {
        const what = "Failed to construct 'Request'";
        init = dict(init, what);
        let from = null;
        if (isObject(input)) {
                try {
                        from = requestState(input);
                } catch (e) {
                        from = null;
                }
        }
        let r;
        if (from === null) {
                const u = parseURL(input, what);
                if (apply(urlUsername, u, []) !== '' || apply(urlPassword, u, []) !== '')
                        throw new TypeErrorC(what + ': Request cannot be constructed from a URL that includes credentials: ' + str(input));
                r = {
                        url: apply(urlHref, u, []), protocol: apply(urlProtocol, u, []), method: 'GET',
                        headers: null, body: null, signal: null, ownSignal: null, redirect: 'follow',
                        mode: 'cors', credentials: 'same-origin', cache: 'default', referrer: 'about:client',
                        referrerPolicy: '', integrity: '', keepalive: false,
                };
        } else {
                r = {
                        url: from.url, protocol: from.protocol, method: from.method, headers: null, body: null,
                        signal: from.signal, ownSignal: null, redirect: from.redirect, mode: from.mode,
                        credentials: from.credentials, cache: from.cache, referrer: from.referrer,
                        referrerPolicy: from.referrerPolicy, integrity: from.integrity, keepalive: from.keepalive,
                };
        }
        if (init.window !== undefined && init.window !== null)
                throw new TypeErrorC(what + ": 'window' must be null");
        if (init.referrer !== undefined) {
                const ref = str(init.referrer);
                r.referrer = ref === '' ? '' : apply(urlHref, parseURL(ref, what), []);
        }
        if (init.referrerPolicy !== undefined)
                r.referrerPolicy = oneOf(init.referrerPolicy, POLICIES, what + ' (referrerPolicy)');
        if (init.mode !== undefined) {
                r.mode = oneOf(init.mode, MODES, what + ' (mode)');
                if (r.mode === 'navigate')
                        throw new TypeErrorC(what + ": Cannot construct a Request with a RequestInit whose mode member is set as 'navigate'.");
        }
        if (init.credentials !== undefined)
                r.credentials = oneOf(init.credentials, CREDENTIALS, what + ' (credentials)');
        if (init.cache !== undefined) {
                r.cache = oneOf(init.cache, CACHES, what + ' (cache)');
                if (r.cache === 'only-if-cached' && r.mode !== 'same-origin')
                        throw new TypeErrorC(what + ": 'only-if-cached' can be set only with 'same-origin' mode");
        }
        if (init.redirect !== undefined)
                r.redirect = oneOf(init.redirect, REDIRECTS, what + ' (redirect)');
        if (init.integrity !== undefined)
                r.integrity = str(init.integrity);
        if (init.keepalive !== undefined)
                r.keepalive = !!init.keepalive;
        if (init.method !== undefined)
                r.method = normalizeMethod(init.method, what);
        if (init.signal !== undefined) {
                if (init.signal !== null && !isSignal(init.signal))
                        throw new TypeErrorC(what + ": member signal is not of type AbortSignal.");
                r.signal = init.signal;
        }
        if (init.duplex !== undefined && str(init.duplex) !== 'half')
                throw new TypeErrorC(what + ": duplex must be 'half'");
        const headers = new Headers();
        if (init.headers !== undefined)
                fillHeaders(headers, init.headers, what);
        else if (from !== null)
                fillHeaders(headers, from.headers, what);
        r.headers = headers;
        const initBody = init.body !== undefined && init.body !== null;
        if ((initBody || (from !== null && from.body !== null)) && (r.method === 'GET' || r.method === 'HEAD'))
                throw new TypeErrorC(what + ': Request with GET/HEAD method cannot have body.');
        if (initBody) {
                const x = extractBody(init.body);
                r.body = x.source ? sourceBody(x.source) : makeBody(x.bytes);
                defaultContentType(headers, x.type);
        } else if (from !== null && from.body !== null) {
                if (unusable(from.body))
                        throw new TypeErrorC(what + ': Cannot construct a Request with a Request object that has already been used.');
                from.body.used = from.body.drained = true;
                r.body = from.body.bytes === null ? sourceBody(from.body.source) : makeBody(from.body.bytes);
        }
        return r;
}

class Request {
        #s;
        constructor(input, init = undefined) {
                if (newRequestFromState !== null) {
                        this.#s = newRequestFromState;
                        newRequestFromState = null;
                        return;
                }
                need(arguments.length, 1, "Failed to construct 'Request'");
                this.#s = buildRequest(input, init);
        }
        get method() {
                return this.#s.method;
        }
        get url() {
                return this.#s.url;
        }
        get headers() {
                return this.#s.headers;
        }
        get destination() {
                this.#s;
                return '';
        }
        get referrer() {
                return this.#s.referrer;
        }
        get referrerPolicy() {
                return this.#s.referrerPolicy;
        }
        get mode() {
                return this.#s.mode;
        }
        get credentials() {
                return this.#s.credentials;
        }
        get cache() {
                return this.#s.cache;
        }
        get redirect() {
                return this.#s.redirect;
        }
        get integrity() {
                return this.#s.integrity;
        }
        get keepalive() {
                return this.#s.keepalive;
        }
        get isReloadNavigation() {
                this.#s;
                return false;
        }
        get isHistoryNavigation() {
                this.#s;
                return false;
        }
        get signal() {
                const s = this.#s;
                if (s.ownSignal === null)
                        s.ownSignal = followSignal(s.signal);
                return s.ownSignal;
        }
        get duplex() {
                this.#s;
                return 'half';
        }
        clone() {
                const s = this.#s;
                if (unusable(s.body))
                        throw new TypeErrorC("Failed to execute 'clone' on 'Request': Request body is already used");
                const c = {};
                for (const k of ownKeys(s))
                        c[k] = s[k];
                c.headers = copyHeaders(s.headers);
                c.body = cloneBody(s.body);
                c.ownSignal = null;
                newRequestFromState = c;
                return new Request();
        }
        static {
                requestState = (r) => r.#s;
        }
}
mixBody(Request, (r) => requestState(r).body);
webidl(Request, 'Request');

/* ------------------------------------------------------------------ Response */

let responseState, newResponseFromState = null;

function responseInit(init, what) {
        init = dict(init, what);
        const status = init.status === undefined ? 200 : toUShort(init.status);
        if (status < 200 || status > 599)
                throw new RangeErrorC(what + ': The status provided (' + status + ') is outside the range [200, 599].');
        const statusText = init.statusText === undefined ? '' : str(init.statusText);
        if (!isReasonPhrase(statusText))
                throw new TypeErrorC(what + ': Invalid statusText');
        const headers = new Headers();
        if (init.headers !== undefined)
                fillHeaders(headers, init.headers, what);
        return { type: 'default', url: '', redirected: false, status, statusText, headers, body: null };
}
function setBody(r, x, what) {
        if (NULL_BODY_STATUS[r.status] === 1)
                throw new TypeErrorC(what + ': Response with null body status cannot have body');
        r.body = x.source ? sourceBody(x.source) : makeBody(x.bytes);
        defaultContentType(r.headers, x.type);
}
function responseFrom(s) {
        newResponseFromState = s;
        return new Response();
}

class Response {
        #s;
        constructor(body = null, init = undefined) {
                if (newResponseFromState !== null) {
                        this.#s = newResponseFromState;
                        newResponseFromState = null;
                        return;
                }
                const what = "Failed to construct 'Response'";
                const r = responseInit(init, what);
                if (body !== null && body !== undefined)
                        setBody(r, extractBody(body), what);
                this.#s = r;
        }
        static error() {
                return responseFrom({
                        type: 'error', url: '', redirected: false, status: 0, statusText: '',
                        headers: newHeaders(GUARD_IMMUTABLE), body: null,
                });
        }
        static redirect(url, status = 302) {
                const what = "Failed to execute 'redirect' on 'Response'";
                need(arguments.length, 1, what);
                const href = apply(urlHref, parseURL(url, what), []);
                status = toUShort(status);
                if (REDIRECT_STATUS[status] !== 1)
                        throw new RangeErrorC(what + ': Invalid status code ' + status);
                const headers = new Headers();
                appendRaw(headersState(headers), 'Location', href);
                headersState(headers).guard = GUARD_IMMUTABLE;
                return responseFrom({ type: 'default', url: '', redirected: false, status, statusText: '', headers, body: null });
        }
        static json(data, init = undefined) {
                const what = "Failed to execute 'json' on 'Response'";
                need(arguments.length, 1, what);
                const text = jsonStringify(data);
                if (text === undefined)
                        throw new TypeErrorC(what + ': Value is not JSON serializable');
                const r = responseInit(init, what);
                setBody(r, { bytes: utf8(text), type: 'application/json' }, what);
                return responseFrom(r);
        }
        get type() {
                return this.#s.type;
        }
        get url() {
                return this.#s.url;
        }
        get redirected() {
                return this.#s.redirected;
        }
        get status() {
                return this.#s.status;
        }
        get ok() {
                const st = this.#s.status;
                return st >= 200 && st <= 299;
        }
        get statusText() {
                return this.#s.statusText;
        }
        get headers() {
                return this.#s.headers;
        }
        clone() {
                const s = this.#s;
                if (unusable(s.body))
                        throw new TypeErrorC("Failed to execute 'clone' on 'Response': Response body is already used");
                return responseFrom({
                        type: s.type, url: s.url, redirected: s.redirected, status: s.status,
                        statusText: s.statusText, headers: copyHeaders(s.headers),
                        body: cloneBody(s.body),
                });
        }
        static {
                responseState = (r) => r.#s;
        }
}
mixBody(Response, (r) => responseState(r).body);
webidl(Response, 'Response');
contentType = (self) => {
        let s;
        try {
                s = requestState(self);
        } catch (e) {
                s = responseState(self);
        }
        const t = getCombined(headersState(s.headers), 'content-type');
        return t === null ? '' : t;
};

/* ------------------------------------------------------------------ fetch */

function fetchFailed(cause) {
        let msg;
        try {
                msg = isObject(cause) && cause.message !== undefined ? str(cause.message) : str(cause);
        } catch (e) {
                msg = '';
        }
        return new TypeErrorC(msg ? 'fetch failed: ' + msg : 'fetch failed', { cause });
}
function malformed(why) {
        return fetchFailed(new TypeErrorC('malformed http result: ' + why));
}
// The host's value -> a Response (type "basic", headers immutable).
function hostResponse(v, req) {
        if (!isObject(v))
                throw malformed('not an object');
        const status = NumberC(v.status);
        if (!(status >= 0 && status <= 999 && status === floor(status)))
                throw malformed('bad status');
        const headers = new Headers(), hs = headersState(headers), hl = v.headers;
        if (hl !== undefined && hl !== null) {
                if (!isArray(hl))
                        throw malformed('headers is not an array');
                for (let i = 0; i < hl.length; i++) {
                        const p = hl[i];
                        if (!isArray(p) || p.length !== 2)
                                throw malformed('bad header pair');
                        appendRaw(hs, str(p[0]), str(p[1]));
                }
        }
        hs.guard = GUARD_IMMUTABLE;
        let body = null;
        const stream = typeof v.stream === 'number' ? v.stream : null;
        if (req.method !== 'HEAD' && NULL_BODY_STATUS[status] !== 1 && stream !== null) {
                body = hostStreamBody(stream);
                const signal = req.signal;
                if (signal !== null) {
                        // Aborting after the head stops the body: the parent
                        // closes the transfer, a read waiting rejects.
                        signal.addEventListener('abort', () => {
                                if (body.hostDone)
                                        return;
                                body.aborted = abortReason(signal);
                                hostClose(body);
                        }, { once: true });
                }
        } else if (stream !== null) {
                hostCloseId(stream);  // no body to read (HEAD, 204, 304)
        } else if (req.method !== 'HEAD' && NULL_BODY_STATUS[status] !== 1) {
                const b64 = v.body_base64 === undefined || v.body_base64 === null ? '' : v.body_base64;
                if (typeof b64 !== 'string')
                        throw malformed('body_base64 is not a string');
                try {
                        body = makeBody(base64ToBytes(b64));
                } catch (e) {
                        throw malformed('body_base64 is not base64');
                }
        }
        return responseFrom({
                type: 'basic',
                url: v.url === undefined || v.url === null ? fragmentless(req.url) : str(v.url),
                redirected: !!v.redirected,
                status,
                statusText: v.statusText === undefined || v.statusText === null ? '' : str(v.statusText),
                headers,
                body,
        });
}
function fragmentless(url) {
        const i = apply(strIndexOf, url, ['#']);
        return i < 0 ? url : apply(strSlice, url, [0, i]);
}

// data: URLs (RFC 2397 as the fetch spec reads it) are answered here.
function isAsciiSpace(c) {
        return c === 9 || c === 10 || c === 12 || c === 13 || c === 32;
}
function trimAscii(s) {
        let a = 0, b = s.length;
        while (a < b && isAsciiSpace(s.charCodeAt(a)))
                a++;
        while (b > a && isAsciiSpace(s.charCodeAt(b - 1)))
                b--;
        return apply(strSlice, s, [a, b]);
}
function percentDecodeBytes(s) {
        const raw = utf8(s), out = new Uint8ArrayC(u8len(raw));
        let j = 0;
        for (let i = 0; i < raw.length; i++) {
                const c = raw[i];
                if (c === 37 && i + 2 < raw.length) {
                        const h = hexval(raw[i + 1]), l = hexval(raw[i + 2]);
                        if (h >= 0 && l >= 0) {
                                out[j++] = h << 4 | l;
                                i += 2;
                                continue;
                        }
                }
                out[j++] = c;
        }
        return apply(u8Slice, out, [0, j]);
}
function hexval(c) {
        return c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1;
}
function dataResponse(req) {
        const url = fragmentless(req.url);
        const comma = apply(strIndexOf, url, [',']);
        if (comma < 0)
                throw fetchFailed(new TypeErrorC('invalid data: URL'));
        let mime = trimAscii(apply(strSlice, url, [5, comma]));
        let bytes = percentDecodeBytes(apply(strSlice, url, [comma + 1]));
        const m = /;[\x09\x0a\x0c\x0d\x20]*base64[\x09\x0a\x0c\x0d\x20]*$/i.exec(mime);
        if (m !== null) {
                mime = apply(strSlice, mime, [0, m.index]);
                let s = '';
                for (let i = 0; i < bytes.length; i++)
                        if (!isAsciiSpace(bytes[i]))
                                s += fcc(bytes[i]);
                try {
                        bytes = base64ToBytes(s);
                } catch (e) {
                        throw fetchFailed(new TypeErrorC('invalid base64 in data: URL'));
                }
        }
        if (mime === '' || mime.charCodeAt(0) === 59)
                mime = 'text/plain' + (mime === '' ? ';charset=US-ASCII' : mime);
        const headers = new Headers();
        appendRaw(headersState(headers), 'content-type', mime);
        headersState(headers).guard = GUARD_IMMUTABLE;
        return responseFrom({
                type: 'basic', url, redirected: false, status: 200, statusText: 'OK', headers,
                body: req.method === 'HEAD' ? null : makeBody(bytes),
        });
}

function fetch(input, init = undefined) {
        let req;
        try {
                need(arguments.length, 1, "Failed to execute 'fetch'");
                req = buildRequest(input, init);
        } catch (e) {
                return rejected(e);
        }
        if (req.body !== null && req.body.bytes === null) {
                // A ReadableStream body: read it to the end, then send.
                const b = req.body, src = b.source;
                b.source = null;
                return then(collect(src), (bytes) => {
                        b.bytes = bytes;
                        return send(req);
                });
        }
        return send(req);
}

function send(req) {
        return new PromiseC((resolve, reject) => {
                const signal = req.signal;
                if (signal !== null && signal.aborted)
                        return reject(abortReason(signal));
                if (req.protocol === 'data:') {
                        try {
                                return resolve(dataResponse(req));
                        } catch (e) {
                                return reject(e);
                        }
                }
                const l = headersState(req.headers).list, headers = [];
                for (let i = 0; i < l.length; i++)
                        push(headers, [l[i][1], l[i][2]]);
                const args = { url: fragmentless(req.url), method: req.method, headers };
                if (req.body !== null) {
                        req.body.used = req.body.drained = true;
                        args.body_base64 = bytesToBase64(req.body.bytes);
                }
                args.redirect = req.redirect;
                // With the surface's ReadableStream, the body comes piece by
                // piece as it arrives (http.read); without it, whole.
                if (hostStreamsFn !== null && req.method !== 'HEAD')
                        args.stream = true;
                let settled = false, onAbort = null, cancel = null;
                const finish = () => {
                        settled = true;
                        if (onAbort !== null)
                                signal.removeEventListener('abort', onAbort);
                };
                if (signal !== null) {
                        onAbort = () => {
                                if (settled)
                                        return;
                                finish();
                                // The parent stops the transfer (call.cancel).
                                if (cancel !== null)
                                        cancel();
                                reject(abortReason(signal));
                        };
                        signal.addEventListener('abort', onAbort, { once: true });
                }
                let p;
                try {
                        if (signal !== null && typeof host.callCancellable === 'function') {
                                const c = apply(host.callCancellable, host, ['http', args]);
                                p = c.promise;
                                cancel = c.cancel;
                        } else {
                                p = apply(hostCall, host, ['http', args]);
                        }
                } catch (e) {
                        p = rejected(e);
                }
                // The result of an aborted call is dropped (it is still
                // journaled by the parent).
                then(p, (v) => {
                        if (settled)
                                return;
                        finish();
                        try {
                                resolve(hostResponse(v, req));
                        } catch (e) {
                                reject(e);
                        }
                }, (e) => {
                        if (settled)
                                return;
                        finish();
                        reject(fetchFailed(e));
                });
        });
}

/* ------------------------------------------------------------------ the installer */

// Calling it again re-points everything at the new host (the tests do; the
// prelude calls it once).  AbortController/AbortSignal are installed only
// when absent, so a later call keeps the first ones.
function installFetch(h) {
        if (!isObject(h) || typeof h.call !== 'function')
                throw new TypeErrorC('__chidoriInstallFetch: host.call must be a function');
        // web.js's classes from the engine (h.web), else the globals (tests).
        const w = typeof h.web === 'function' ? h.web() : G;
        TextEncoderC = w.TextEncoder;
        TextDecoderC = w.TextDecoder;
        URLC = w.URL;
        URLSearchParamsC = w.URLSearchParams;
        DOMExceptionC = w.DOMException;
        uspToString = URLSearchParamsC.prototype.toString;
        urlHref = gopd(URLC.prototype, 'href').get;
        urlProtocol = gopd(URLC.prototype, 'protocol').get;
        urlUsername = gopd(URLC.prototype, 'username').get;
        urlPassword = gopd(URLC.prototype, 'password').get;
        teEncode = TextEncoderC.prototype.encode;
        tdDecode = TextDecoderC.prototype.decode;
        encoder = decoder = null;
        host = h;
        hostCall = h.call;
        hostSetTimeout = typeof h.setTimeout === 'function' ? h.setTimeout : null;
        hostSurfaceBody = typeof h.surfaceBody === 'function' ? h.surfaceBody : null;
        hostParseForm = typeof h.parseForm === 'function' ? h.parseForm : null;
        hostStreamsFn = typeof h.streams === 'function' ? h.streams : null;
        if (typeof G.AbortController !== 'function') {
                define(G, 'AbortController', OwnAbort.AbortController);
                define(G, 'AbortSignal', OwnAbort.AbortSignal);
        }
        AbortControllerC = G.AbortController;
        define(G, 'Headers', Headers);
        define(G, 'Request', Request);
        define(G, 'Response', Response);
        define(G, 'fetch', fetch);
}

dp(G, '__chidoriInstallFetch', { value: installFetch, writable: true, enumerable: false, configurable: true });
}
