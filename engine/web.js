/*
 * chidori web platform polyfills for a bare JavaScriptCore context.
 *
 * Defines, only where absent: DOMException, TextEncoder, TextDecoder, atob,
 * btoa, URL, URLSearchParams, structuredClone, queueMicrotask.
 * Pure ECMAScript: no timers, no host calls, no helper globals.  The engine
 * evaluates it on first touch of one of these globals (engine/prelude.js).
 *
 * Known deviations (see also tests/js/):
 * - URL follows what Node 20 (ada) does where the WHATWG spec has since moved:
 *   '^' is not percent-encoded in paths, and clearing search/hash strips
 *   trailing spaces from an opaque path.
 * - IDNA: non-ASCII hosts are mapped with toLowerCase + NFKC (an approximation
 *   of the UTS #46 mapping table), checked against a coarse disallowed set
 *   (controls, unassigned, private use, joiners; no bidi/CONTEXTJ rules) and
 *   punycode-encoded; "xn--" labels are checked to decode and to be stable
 *   under that mapping.
 * - structuredClone copies transferred ArrayBuffers and then detaches the
 *   originals with ArrayBuffer.prototype.transfer (observably equivalent).
 *   A Proxy is cloned through its traps rather than rejected; length-tracking
 *   views become fixed-length; SharedArrayBuffer is rejected (no
 *   cross-origin isolation here); Error clones keep name, message, stack and
 *   cause (as V8 does). Non-serializable host objects are recognised by tag
 *   (Promise, WeakMap, iterators...) or by being one of our own classes.
 * - TextDecoder supports utf-8, utf-16le, utf-16be and windows-1252 (with
 *   their WHATWG labels); any other label throws RangeError.
 */
(function () {
'use strict';
var G = globalThis, O = Object, dp = O.defineProperty, gopd = O.getOwnPropertyDescriptor;
var fcc = String.fromCharCode, toStr = O.prototype.toString;
var slots; // WeakMap of internal slots, created on first use (startup cost)

function def(o, k, v) { dp(o, k, { value: v, writable: true, configurable: true, enumerable: false }); }
var out = {}; // what this file defines, handed to the engine's prelude (end of file)
function install(name, v) { out[name] = v; if (typeof G[name] === 'undefined') def(G, name, v); }
function str(v) {
        if (typeof v === 'symbol') throw new TypeError('Cannot convert a Symbol value to a string');
        return String(v);
}
var wf0 = String.prototype.toWellFormed;
function usv(v) {
        v = str(v);
        if (wf0) return wf0.call(v);
        if (!/[\uD800-\uDFFF]/.test(v)) return v;
        for (var o = '', i = 0, c, d; i < v.length; i++) {
                c = v.charCodeAt(i);
                if (c < 0xDC00 && c >= 0xD800 && (d = v.charCodeAt(i + 1)) >= 0xDC00 && d < 0xE000) o += v[i] + v[++i];
                else o += c >= 0xD800 && c < 0xE000 ? '\uFFFD' : v[i];
        }
        return o;
}
function need(n, k, what) {
        if (n < k) throw new TypeError(what + ': ' + k + ' argument' + (k > 1 ? 's' : '') + ' required, but only ' + n + ' present.');
}
// Internal slots live in one WeakMap keyed by the wrapper; kind-checked.
// Nothing at load time calls into lazily-initialised JSC builtins (WeakMap,
// typed arrays, Promise, Array.prototype.forEach...): that is what keeps the
// evaluation of this file cheap.
function sset(o, s) { (slots || (slots = new WeakMap())).set(o, s); }
function sget(o) { return slots && slots.get(o); }
function slot(o, kind) {
        var s = sget(o);
        if (!s || s.k !== kind) throw new TypeError('Illegal invocation');
        return s;
}
function webidl(C, tag) {
        var p = C.prototype, k = O.getOwnPropertyNames(p), i, d;
        for (i = 0; i < k.length; i++) {
                if (k[i] !== 'constructor') { d = gopd(p, k[i]); d.enumerable = true; dp(p, k[i], d); }
        }
        dp(p, Symbol.toStringTag, { value: tag, configurable: true });
}
function dict(o, what) {
        if (o !== undefined && o !== null && typeof o !== 'object' && typeof o !== 'function')
                throw new TypeError(what + ': options must be an object');
        return o || {};
}
function getter(p, k) { return gopd(p, k).get; }

/* ---------------------------------------------------------------- DOMException */
// Legacy code n is the name at index n - 1.
var DE_NAMES = ['IndexSizeError', '', 'HierarchyRequestError', 'WrongDocumentError', 'InvalidCharacterError', '',
        'NoModificationAllowedError', 'NotFoundError', 'NotSupportedError', 'InUseAttributeError', 'InvalidStateError',
        'SyntaxError', 'InvalidModificationError', 'NamespaceError', 'InvalidAccessError', '', 'TypeMismatchError',
        'SecurityError', 'NetworkError', 'AbortError', 'URLMismatchError', 'QuotaExceededError', 'TimeoutError',
        'InvalidNodeTypeError', 'DataCloneError'];
class DOMException {
        constructor(message = '', options = 'Error') {
                var name = options, s;
                if (options !== null && typeof options === 'object') {
                        name = options.name === undefined ? 'Error' : options.name;
                        if ('cause' in options) def(this, 'cause', options.cause);
                }
                s = { k: 'DOMException', message: str(message), name: str(name) };
                sset(this, s);
                if (Error.captureStackTrace) Error.captureStackTrace(this, DOMException);
                else def(this, 'stack', new Error(s.message).stack);
        }
        get name() { return slot(this, 'DOMException').name; }
        get message() { return slot(this, 'DOMException').message; }
        get code() { var n = slot(this, 'DOMException').name; return n ? DE_NAMES.indexOf(n) + 1 : 0; }
}
O.setPrototypeOf(DOMException.prototype, Error.prototype);
webidl(DOMException, 'DOMException');
(function (names) {
        for (var i = 0, d; i < names.length; i++) {
                d = { value: i + 1, enumerable: true };
                dp(DOMException, names[i] + '_ERR', d);
                dp(DOMException.prototype, names[i] + '_ERR', d);
        }
})(['INDEX_SIZE', 'DOMSTRING_SIZE', 'HIERARCHY_REQUEST', 'WRONG_DOCUMENT', 'INVALID_CHARACTER', 'NO_DATA_ALLOWED',
    'NO_MODIFICATION_ALLOWED', 'NOT_FOUND', 'NOT_SUPPORTED', 'INUSE_ATTRIBUTE', 'INVALID_STATE', 'SYNTAX',
    'INVALID_MODIFICATION', 'NAMESPACE', 'INVALID_ACCESS', 'VALIDATION', 'TYPE_MISMATCH', 'SECURITY', 'NETWORK', 'ABORT',
    'URL_MISMATCH', 'QUOTA_EXCEEDED', 'TIMEOUT', 'INVALID_NODE_TYPE', 'DATA_CLONE']);
install('DOMException', DOMException);
var DOMEx = out.DOMException;
function domErr(msg, name) { return new DOMEx(msg, name); }

/* ------------------------------------------------------------------- encoding */
// UTF-8 encode s into d (Uint8Array); lone surrogates become U+FFFD.
function utf8Into(s, d) {
        var i = 0, w = 0, n = s.length, m = d.length, c, c2;
        for (; i < n; i++) {
                c = s.charCodeAt(i);
                if (c < 0x80) { if (w >= m) break; d[w++] = c; continue; }
                if (c < 0x800) {
                        if (w + 2 > m) break;
                        d[w++] = 0xC0 | c >> 6; d[w++] = 0x80 | c & 63; continue;
                }
                if (c >= 0xD800 && c < 0xE000) {
                        if (c < 0xDC00 && (c2 = s.charCodeAt(i + 1)) >= 0xDC00 && c2 < 0xE000) {
                                if (w + 4 > m) break;
                                c = 0x10000 + ((c - 0xD800) << 10) + (c2 - 0xDC00);
                                d[w++] = 0xF0 | c >> 18; d[w++] = 0x80 | c >> 12 & 63;
                                d[w++] = 0x80 | c >> 6 & 63; d[w++] = 0x80 | c & 63;
                                i++;
                                continue;
                        }
                        c = 0xFFFD;
                }
                if (w + 3 > m) break;
                d[w++] = 0xE0 | c >> 12; d[w++] = 0x80 | c >> 6 & 63; d[w++] = 0x80 | c & 63;
        }
        return { read: i, written: w };
}
function utf8Enc(s) {
        var b = new Uint8Array(s.length * 3), n = utf8Into(s, b).written;
        return n === b.length ? b : b.slice(0, n);
}
function badData(enc) { return new TypeError('The encoded data was not valid for encoding ' + enc); }
// Streaming decoders: st is per-stream state, b a Uint8Array, returns string.
// Output is collected as UTF-16 code units and flushed in chunks.
function Out() { this.a = []; this.s = ''; }
Out.prototype.push = function (c) {
        var a = this.a;
        if (c > 0xFFFF) { c -= 0x10000; a.push(0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF)); } else a.push(c);
        if (a.length > 8190) { this.s += fcc.apply(null, a); this.a = []; }
};
// Append bytes b[i..j) that are all < 0x80.
Out.prototype.run = function (b, i, j) {
        if (j - i < 64) { for (; i < j; i++) this.push(b[i]); return; }
        if (this.a.length) { this.s += fcc.apply(null, this.a); this.a = []; }
        for (; i < j; i += 8192) this.s += fcc.apply(null, b.subarray(i, Math.min(j, i + 8192)));
};
Out.prototype.end = function () { return this.s + (this.a.length ? fcc.apply(null, this.a) : ''); };
var DECODERS = {
        'utf-8': function (st, b, flush) {
                var o = new Out(), i = 0, n = b.length, x, j, need = st.need || 0, seen = st.seen || 0,
                        cp = st.cp || 0, lo = st.lo || 0x80, hi = st.hi || 0xBF;
                for (; i < n; i++) {
                        x = b[i];
                        if (!need) {
                                if (x < 0x80) {
                                        for (j = i + 1; j < n && b[j] < 0x80; j++);
                                        o.run(b, i, j);
                                        i = j - 1;
                                } else if (x >= 0xC2 && x <= 0xDF) { need = 1; cp = x & 0x1F; }
                                else if (x >= 0xE0 && x <= 0xEF) {
                                        if (x === 0xE0) lo = 0xA0; else if (x === 0xED) hi = 0x9F;
                                        need = 2; cp = x & 0xF;
                                } else if (x >= 0xF0 && x <= 0xF4) {
                                        if (x === 0xF0) lo = 0x90; else if (x === 0xF4) hi = 0x8F;
                                        need = 3; cp = x & 7;
                                } else { if (st.fatal) throw badData('utf-8'); o.push(0xFFFD); }
                                continue;
                        }
                        if (x < lo || x > hi) {
                                cp = need = seen = 0; lo = 0x80; hi = 0xBF; i--;
                                if (st.fatal) throw badData('utf-8');
                                o.push(0xFFFD);
                                continue;
                        }
                        lo = 0x80; hi = 0xBF; cp = cp << 6 | x & 0x3F;
                        if (++seen === need) { o.push(cp); cp = need = seen = 0; }
                }
                if (flush && need) {
                        need = seen = cp = 0; lo = 0x80; hi = 0xBF;
                        if (st.fatal) throw badData('utf-8');
                        o.push(0xFFFD);
                }
                st.need = need; st.seen = seen; st.cp = cp; st.lo = lo; st.hi = hi;
                return o.end();
        },
        'utf-16le': function (st, b, flush) { return utf16(st, b, flush, 0); },
        'utf-16be': function (st, b, flush) { return utf16(st, b, flush, 1); },
        'windows-1252': function (st, b) {
                var o = new Out(), i = 0, x;
                for (; i < b.length; i++) {
                        x = b[i];
                        o.push(x >= 0x80 && x < 0xA0 ? W1252.charCodeAt(x - 0x80) : x);
                }
                return o.end();
        }
};
var W1252 = '\u20AC\x81\u201A\u0192\u201E\u2026\u2020\u2021\u02C6\u2030\u0160\u2039\u0152\x8D\u017D\x8F' +
        '\x90\u2018\u2019\u201C\u201D\u2022\u2013\u2014\u02DC\u2122\u0161\u203A\u0153\x9D\u017E\u0178';
function utf16(st, b, flush, be) {
        var o = new Out(), i = 0, lb = st.lb === undefined ? -1 : st.lb, ls = st.ls === undefined ? -1 : st.ls, cu, name = be ? 'utf-16be' : 'utf-16le';
        for (; i < b.length; i++) {
                if (lb < 0) { lb = b[i]; continue; }
                cu = be ? lb << 8 | b[i] : lb | b[i] << 8;
                lb = -1;
                if (ls >= 0) {
                        if (cu >= 0xDC00 && cu < 0xE000) { o.push(ls); o.push(cu); ls = -1; continue; }
                        ls = -1;
                        if (st.fatal) throw badData(name);
                        o.push(0xFFFD);
                }
                if (cu >= 0xD800 && cu < 0xDC00) ls = cu;
                else if (cu >= 0xDC00 && cu < 0xE000) { if (st.fatal) throw badData(name); o.push(0xFFFD); }
                else o.push(cu);
        }
        if (flush && (lb >= 0 || ls >= 0)) {
                lb = ls = -1;
                if (st.fatal) throw badData(name);
                o.push(0xFFFD);
        }
        st.lb = lb; st.ls = ls;
        return o.end();
}
function utf8Dec(b) { return DECODERS['utf-8']({}, b, true); }
var LABELS;
function labels() {
        if (LABELS) return LABELS;
        LABELS = O.create(null);
        [['utf-8', 'unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8'],
         ['utf-16le', 'csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le'],
         ['utf-16be', 'unicodefffe utf-16be'],
         ['windows-1252', 'ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 ' +
          'iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252']
        ].forEach(function (e) { e[1].split(' ').forEach(function (l) { LABELS[l] = e[0]; }); });
        return LABELS;
}
function abLen(b) { return getter(ArrayBuffer.prototype, 'byteLength').call(b); }
function isAB(v) { try { abLen(v); return true; } catch (e) { return false; } }
function isView(v) { return ArrayBuffer.isView(v); }
function taProto() { return O.getPrototypeOf(Uint8Array.prototype); }
function taTag(v) { return getter(taProto(), Symbol.toStringTag).call(v); }
function bytesOf(v) {
        if (isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
        if (isAB(v) || (typeof SharedArrayBuffer === 'function' && v instanceof SharedArrayBuffer)) return new Uint8Array(v);
        throw new TypeError('The "input" argument must be an instance of ArrayBuffer or ArrayBufferView');
}

class TextEncoder {
        constructor() { sset(this, { k: 'TextEncoder' }); }
        get encoding() { slot(this, 'TextEncoder'); return 'utf-8'; }
        encode(input = '') { slot(this, 'TextEncoder'); return utf8Enc(usv(input)); }
        encodeInto(source, destination) {
                slot(this, 'TextEncoder');
                need(arguments.length, 2, "Failed to execute 'encodeInto' on 'TextEncoder'");
                if (taTag(destination) !== 'Uint8Array') throw new TypeError('The "dest" argument must be an instance of Uint8Array');
                return utf8Into(str(source), destination);
        }
}
webidl(TextEncoder, 'TextEncoder');
install('TextEncoder', TextEncoder);

class TextDecoder {
        constructor(label = 'utf-8', options = undefined) {
                var l = str(label), enc = labels()[l.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, '').toLowerCase()];
                if (!enc) throw new RangeError('The "' + l + '" encoding is not supported');
                options = dict(options, 'TextDecoder');
                sset(this, { k: 'TextDecoder', enc: enc, fatal: !!options.fatal, ignoreBOM: !!options.ignoreBOM, st: null, bom: false, keep: false });
        }
        get encoding() { return slot(this, 'TextDecoder').enc; }
        get fatal() { return slot(this, 'TextDecoder').fatal; }
        get ignoreBOM() { return slot(this, 'TextDecoder').ignoreBOM; }
        decode(input = undefined, options = undefined) {
                var d = slot(this, 'TextDecoder'), b = input === undefined ? new Uint8Array(0) : bytesOf(input), s;
                var stream = !!dict(options, 'decode').stream;
                if (!d.keep) { d.st = { fatal: d.fatal }; d.bom = false; }
                d.keep = stream;
                s = DECODERS[d.enc](d.st, b, !stream);
                if (!d.ignoreBOM && !d.bom && s && d.enc !== 'windows-1252') {
                        d.bom = true;
                        if (s.charCodeAt(0) === 0xFEFF) s = s.slice(1);
                }
                return s;
        }
}
webidl(TextDecoder, 'TextDecoder');
install('TextDecoder', TextDecoder);

/* --------------------------------------------------------------------- base64 */
var B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/', B64R;
function btoa(data) {
        need(arguments.length, 1, "Failed to execute 'btoa'");
        var s = str(data), n = s.length, i = 0, o = '', v;
        if (/[^\0-\xFF]/.test(s)) throw domErr('Invalid character', 'InvalidCharacterError');
        for (; i + 2 < n; i += 3) {
                v = s.charCodeAt(i) << 16 | s.charCodeAt(i + 1) << 8 | s.charCodeAt(i + 2);
                o += B64[v >> 18] + B64[v >> 12 & 63] + B64[v >> 6 & 63] + B64[v & 63];
        }
        if (n - i === 1) { v = s.charCodeAt(i); o += B64[v >> 2] + B64[v << 4 & 63] + '=='; }
        else if (n - i === 2) { v = s.charCodeAt(i) << 8 | s.charCodeAt(i + 1); o += B64[v >> 10] + B64[v >> 4 & 63] + B64[v << 2 & 63] + '='; }
        return o;
}
function atob(data) {
        need(arguments.length, 1, "Failed to execute 'atob'");
        var s = str(data).replace(/[\t\n\f\r ]+/g, ''), o = new Out(), i, v = 0, bits = 0;
        if (s.length % 4 === 0) s = s.replace(/==?$/, '');
        if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s))
                throw domErr('The string to be decoded is not correctly encoded.', 'InvalidCharacterError');
        if (!B64R) { B64R = new Uint8Array(128); for (i = 0; i < 64; i++) B64R[B64.charCodeAt(i)] = i; }
        for (i = 0; i < s.length; i++) {
                v = (v << 6 | B64R[s.charCodeAt(i)]) & 0xFFFFFF; bits += 6;
                if (bits >= 8) { bits -= 8; o.push(v >> bits & 0xFF); }
        }
        return o.end();
}
install('atob', atob);
install('btoa', btoa);

/* ------------------------------------------------------------------------ URL */
// Percent-encode sets: C0 controls and > U+007E always, plus these ASCII chars.
var FRAG_SET = ' "<>`', QUERY_SET = ' "#<>', SQUERY_SET = QUERY_SET + "'", PATH_SET = QUERY_SET + '?`{}',
        USERINFO_SET = PATH_SET + '/:;=@[\\]^|', COMPONENT_SET = USERINFO_SET + '$%&+,', FORM_SET = COMPONENT_SET + "!'()~";
var HEX = '0123456789ABCDEF', MASKS = {};
function enc(s, set) {
        var m = MASKS[set], o = '', j = 0, i = 0, n = s.length, c, d;
        if (!m) {
                m = MASKS[set] = new Uint8Array(128);
                for (c = 0; c < 128; c++) m[c] = c < 0x20 || c === 0x7F || set.indexOf(fcc(c)) >= 0 ? 1 : 0;
        }
        for (; i < n; i++) {
                c = s.charCodeAt(i);
                if (c < 0x80 && !m[c]) continue;
                o += s.slice(j, i);
                if (c < 0x80) o += '%' + HEX[c >> 4] + HEX[c & 15];
                else if (c >= 0xD800 && c < 0xE000) {
                        if (c < 0xDC00 && (d = s.charCodeAt(i + 1)) >= 0xDC00 && d < 0xE000) o += encodeURIComponent(s[i] + s[++i]);
                        else o += '%EF%BF%BD';
                } else o += encodeURIComponent(s[i]);
                j = i + 1;
        }
        return j ? o + s.slice(j) : s;
}
function hexv(c) { return c >= 48 && c <= 57 ? c - 48 : (c |= 32) >= 97 && c <= 102 ? c - 87 : -1; }
function pctDecode(s) {
        var b = utf8Enc(s), o = new Uint8Array(b.length), i = 0, j = 0, h, l;
        for (; i < b.length; i++) {
                if (b[i] === 37 && i + 2 < b.length && (h = hexv(b[i + 1])) >= 0 && (l = hexv(b[i + 2])) >= 0) { o[j++] = h << 4 | l; i += 2; }
                else o[j++] = b[i];
        }
        return o.subarray(0, j);
}
function formDec(s) {
        s = s.replace(/\+/g, ' ');
        if (s.indexOf('%') < 0) return s;
        // decodeURIComponent agrees with percent-decode + UTF-8 decode whenever
        // it succeeds; malformed input takes the spec path.
        try { return decodeURIComponent(s); } catch (e) { return utf8Dec(pctDecode(s)); }
}
function formParse(s) {
        for (var l = [], p = s.split('&'), i = 0, k; i < p.length; i++) {
                if (!p[i]) continue;
                k = p[i].indexOf('=');
                l.push(k < 0 ? [formDec(p[i]), ''] : [formDec(p[i].slice(0, k)), formDec(p[i].slice(k + 1))]);
        }
        return l;
}
function formEnc(s) { s = enc(s, FORM_SET); return s.indexOf('%20') < 0 ? s : s.replace(/%20/g, '+'); }
function formSer(l) { return l.map(function (p) { return formEnc(p[0]) + '=' + formEnc(p[1]); }).join('&'); }

var DEFPORT = { __proto__: null, ftp: 21, file: null, http: 80, https: 443, ws: 80, wss: 443 };
function special(u) { return u.scheme in DEFPORT; }

// Hosts are kept serialized: domain, "a.b.c.d", "[v6]", opaque host, or "".
function v4num(s) {
        var r = 10;
        if (!s) return null;
        if (/^0x/i.test(s)) { s = s.slice(2); r = 16; }
        else if (s.length > 1 && s[0] === '0') { s = s.slice(1); r = 8; }
        if (!s) return 0;
        return (r === 10 ? /^\d+$/ : r === 16 ? /^[\da-f]+$/i : /^[0-7]+$/).test(s) ? parseInt(s, r) : null;
}
function endsInNumber(s) {
        var p = s.split('.'), l;
        if (p[p.length - 1] === '') { if (p.length === 1) return false; p.pop(); }
        l = p[p.length - 1];
        return /^\d+$/.test(l) || v4num(l) !== null;
}
function ipv4(s) {
        var p = s.split('.'), n = [], i, v;
        if (p[p.length - 1] === '' && p.length > 1) p.pop();
        if (p.length > 4) return null;
        for (i = 0; i < p.length; i++) { if ((v = v4num(p[i])) === null) return null; n.push(v); }
        for (i = 0; i < n.length - 1; i++) if (n[i] > 255) return null;
        v = n.pop();
        if (v >= Math.pow(256, 4 - n.length)) return null;
        for (i = 0; i < n.length; i++) v += n[i] * Math.pow(256, 3 - i);
        return [v >>> 24, v >>> 16 & 255, v >>> 8 & 255, v & 255].join('.');
}
function ipv6(s) {
        var a = [0, 0, 0, 0, 0, 0, 0, 0], pi = 0, comp = null, p = 0, v, len, seen, piece, d;
        function hexAt(q) { var c = s.charCodeAt(q); return c >= 48 && c <= 57 || (c | 32) >= 97 && (c | 32) <= 102; }
        function dig(q) { var c = s.charCodeAt(q); return c >= 48 && c <= 57; }
        if (s[0] === ':') { if (s[1] !== ':') return null; p = 2; comp = ++pi; }
        while (p < s.length) {
                if (pi === 8) return null;
                if (s[p] === ':') { if (comp !== null) return null; p++; comp = ++pi; continue; }
                for (v = len = 0; len < 4 && hexAt(p); len++, p++) v = v * 16 + parseInt(s[p], 16);
                if (s[p] === '.') {
                        if (!len) return null;
                        p -= len;
                        if (pi > 6) return null;
                        for (seen = 0; p < s.length; ) {
                                piece = null;
                                if (seen > 0) { if (s[p] === '.' && seen < 4) p++; else return null; }
                                if (!dig(p)) return null;
                                while (dig(p)) {
                                        d = +s[p];
                                        if (piece === null) piece = d; else if (piece === 0) return null; else piece = piece * 10 + d;
                                        if (piece > 255) return null;
                                        p++;
                                }
                                a[pi] = a[pi] * 256 + piece;
                                if (++seen === 2 || seen === 4) pi++;
                        }
                        if (seen !== 4) return null;
                        break;
                } else if (s[p] === ':') { if (++p === s.length) return null; }
                else if (p < s.length) return null;
                a[pi++] = v;
        }
        if (comp !== null) {
                for (v = pi - comp, pi = 7; pi !== 0 && v > 0; pi--, v--) { d = a[pi]; a[pi] = a[comp + v - 1]; a[comp + v - 1] = d; }
        } else if (pi !== 8) return null;
        // serialize, compressing the first longest run of two or more zeros
        var best = -1, bl = 1, i, j, o = '';
        for (i = 0; i < 8; i = j + 1) {
                for (j = i; j < 8 && a[j] === 0; j++);
                if (j - i > bl) { best = i; bl = j - i; }
        }
        for (i = 0; i < 8; i++) {
                if (i === best) { o += i ? ':' : '::'; i += bl - 1; continue; }
                o += a[i].toString(16) + (i < 7 ? ':' : '');
        }
        return '[' + o + ']';
}
// Punycode (RFC 3492) for the IDNA approximation.
function adapt(d, n, first) {
        var k = 0;
        d = first ? Math.floor(d / 700) : d >> 1;
        for (d += Math.floor(d / n); d > 455; k += 36) d = Math.floor(d / 35);
        return k + Math.floor(36 * d / (d + 38));
}
function pdig(d) { return fcc(d + 22 + 75 * (d < 26)); }
function punyEnc(label) {
        var cps = Array.from(label, function (c) { return c.codePointAt(0); }), n = 128, delta = 0, bias = 72, o = '', b, h, m, q, k, t, i;
        for (i = 0; i < cps.length; i++) if (cps[i] < 128) o += fcc(cps[i]);
        b = h = o.length;
        if (b) o += '-';
        while (h < cps.length) {
                for (m = Infinity, i = 0; i < cps.length; i++) if (cps[i] >= n && cps[i] < m) m = cps[i];
                delta += (m - n) * (h + 1); n = m;
                for (i = 0; i < cps.length; i++) {
                        if (cps[i] < n) delta++;
                        if (cps[i] !== n) continue;
                        for (q = delta, k = 36; ; k += 36) {
                                t = k <= bias ? 1 : k >= bias + 26 ? 26 : k - bias;
                                if (q < t) break;
                                o += pdig(t + (q - t) % (36 - t)); q = Math.floor((q - t) / (36 - t));
                        }
                        o += pdig(q); bias = adapt(delta, h + 1, h === b); delta = 0; h++;
                }
                delta++; n++;
        }
        return o;
}
function punyDec(s) {
        var out = [], i = 0, n = 128, bias = 72, b = s.lastIndexOf('-'), p, oldi, w, k, c, d, t;
        if (b < 0) b = 0;
        for (p = 0; p < b; p++) { if (s.charCodeAt(p) > 127) return null; out.push(s.charCodeAt(p)); }
        for (p = b > 0 ? b + 1 : 0; p < s.length; ) {
                for (oldi = i, w = 1, k = 36; ; k += 36) {
                        if (p >= s.length) return null;
                        c = s.charCodeAt(p++);
                        d = c >= 48 && c <= 57 ? c - 22 : c >= 65 && c <= 90 ? c - 65 : c >= 97 && c <= 122 ? c - 97 : 36;
                        if (d >= 36 || d > Math.floor((0x7FFFFFFF - i) / w)) return null;
                        i += d * w;
                        t = k <= bias ? 1 : k >= bias + 26 ? 26 : k - bias;
                        if (d < t) break;
                        w *= 36 - t;
                }
                bias = adapt(i - oldi, out.length + 1, oldi === 0);
                n += Math.floor(i / (out.length + 1));
                i %= out.length + 1;
                if (n > 0x10FFFF) return null;
                out.splice(i++, 0, n);
        }
        return String.fromCodePoint.apply(null, out);
}
function idnMap(s) {
        return s.replace(/[\u00AD\u034F\u180B-\u180D\u200B\u2060\uFE00-\uFE0F\uFEFF]/g, '')
                .replace(/[\u3002\uFF0E\uFF61]/g, '.').toLowerCase().normalize('NFKC');
}
// Code points UTS #46 disallows that the mapping above lets through:
// controls, unassigned, private use, surrogates, line/paragraph separators,
// U+FFFD, and the joiners (their CONTEXTJ exceptions are not implemented).
function idnBad(s) { return /[\p{Cc}\p{Cn}\p{Co}\p{Cs}\p{Zl}\p{Zp}\u200C\u200D\uFFFD]/u.test(s); }
function toASCII(d) {
        var ascii = !/[^\0-\x7F]/.test(d);
        d = ascii ? d.toLowerCase() : idnMap(d);
        if (!ascii && idnBad(d)) return null;
        if (!ascii || /(^|\.)xn--/.test(d)) {
                d = d.split('.').map(function (l) {
                        if (/^xn--/.test(l)) {
                                var u = punyDec(l.slice(4));
                                if (!u || idnMap(u) !== u || idnBad(u)) return null;
                                return l;
                        }
                        return /[^\0-\x7F]/.test(l) ? 'xn--' + punyEnc(l) : l;
                });
                if (d.indexOf(null) >= 0) return null;
                d = d.join('.');
        }
        return d;
}
function parseHost(s, opaque) {
        var d;
        if (s[0] === '[') return s[s.length - 1] === ']' ? ipv6(s.slice(1, -1)) : null;
        if (opaque) return /[\0\t\n\r #/:<>?@[\\\]^|]/.test(s) ? null : enc(s, '');
        d = toASCII(/[%\x80-\uFFFF]/.test(s) ? utf8Dec(pctDecode(s)) : s);
        if (!d || /[\0-\x20#%/:<>?@[\\\]^|\x7F]/.test(d)) return null;
        return endsInNumber(d) ? ipv4(d) : d;
}
function isDrive(s, normalized) { return s.length === 2 && /^[A-Za-z]/.test(s) && (s[1] === ':' || !normalized && s[1] === '|'); }
function startsWithDrive(s, p) { return /^[A-Za-z][:|]([/\\?#]|$)/.test(s.slice(p, p + 3)); }
function shorten(u) {
        if (u.scheme === 'file' && u.path.length === 1 && isDrive(u.path[0], true)) return;
        u.path.pop();
}
function isDot(b) { return b === '.' || /^%2e$/i.test(b); }
function isDotDot(b) { return /^(\.|%2e)(\.|%2e)$/i.test(b); }

var SCHEME_START = 1, SCHEME = 2, NO_SCHEME = 3, SPECIAL_REL_OR_AUTH = 4, PATH_OR_AUTH = 5, RELATIVE = 6,
        RELATIVE_SLASH = 7, SPECIAL_AUTH_SLASHES = 8, SPECIAL_AUTH_IGNORE = 9, AUTHORITY = 10, HOST = 11,
        HOSTNAME = 12, PORT = 13, FILE = 14, FILE_SLASH = 15, FILE_HOST = 16, PATH_START = 17, PATH = 18,
        OPAQUE_PATH = 19, QUERY = 20, FRAGMENT = 21;

// The WHATWG basic URL parser. Returns the record, or null on failure.
function parse(input, base, url, so) {
        if (!url) {
                url = { scheme: '', username: '', password: '', host: null, port: null, path: [], query: null, fragment: null };
                input = input.replace(/^[\0-\x20]+|[\0-\x20]+$/g, '');
        }
        input = input.replace(/[\t\n\r]/g, '');
        var st = so || SCHEME_START, buf = '', at = false, brk = false, pw = false, p = 0, n = input.length, c, t;
        for (;;) {
                c = input[p];
                switch (st) {
                case SCHEME_START:
                        if (c && /[A-Za-z]/.test(c)) { buf += c.toLowerCase(); st = SCHEME; }
                        else if (!so) { st = NO_SCHEME; p--; }
                        else return null;
                        break;
                case SCHEME:
                        if (c && /[A-Za-z0-9+\-.]/.test(c)) buf += c.toLowerCase();
                        else if (c === ':') {
                                if (so) {
                                        if (special(url) !== (buf in DEFPORT)) return url;
                                        if ((url.username || url.password || url.port !== null) && buf === 'file') return url;
                                        if (url.scheme === 'file' && url.host === '') return url;
                                }
                                url.scheme = buf;
                                if (so) { if (url.port === DEFPORT[buf]) url.port = null; return url; }
                                buf = '';
                                if (url.scheme === 'file') st = FILE;
                                else if (special(url) && base && base.scheme === url.scheme) st = SPECIAL_REL_OR_AUTH;
                                else if (special(url)) st = SPECIAL_AUTH_SLASHES;
                                else if (input[p + 1] === '/') { st = PATH_OR_AUTH; p++; }
                                else { url.path = ''; st = OPAQUE_PATH; }
                        } else if (!so) { buf = ''; st = NO_SCHEME; p = -1; }
                        else return null;
                        break;
                case NO_SCHEME:
                        if (!base || typeof base.path === 'string' && c !== '#') return null;
                        if (typeof base.path === 'string') {
                                url.scheme = base.scheme; url.path = base.path; url.query = base.query;
                                url.fragment = ''; st = FRAGMENT;
                        } else { st = base.scheme === 'file' ? FILE : RELATIVE; p--; }
                        break;
                case SPECIAL_REL_OR_AUTH:
                case SPECIAL_AUTH_SLASHES:
                        if (c === '/' && input[p + 1] === '/') { st = SPECIAL_AUTH_IGNORE; p++; }
                        else { st = st === SPECIAL_REL_OR_AUTH ? RELATIVE : SPECIAL_AUTH_IGNORE; p--; }
                        break;
                case PATH_OR_AUTH:
                        if (c === '/') st = AUTHORITY; else { st = PATH; p--; }
                        break;
                case RELATIVE:
                        url.scheme = base.scheme;
                        if (c === '/' || c === '\\' && special(url)) st = RELATIVE_SLASH;
                        else {
                                url.username = base.username; url.password = base.password; url.host = base.host;
                                url.port = base.port; url.path = base.path.slice(); url.query = base.query;
                                if (c === '?') { url.query = ''; st = QUERY; }
                                else if (c === '#') { url.fragment = ''; st = FRAGMENT; }
                                else if (c !== undefined) { url.query = null; shorten(url); st = PATH; p--; }
                        }
                        break;
                case RELATIVE_SLASH:
                        if (special(url) && (c === '/' || c === '\\')) st = SPECIAL_AUTH_IGNORE;
                        else if (c === '/') st = AUTHORITY;
                        else {
                                url.username = base.username; url.password = base.password; url.host = base.host;
                                url.port = base.port; st = PATH; p--;
                        }
                        break;
                case SPECIAL_AUTH_IGNORE:
                        if (c !== '/' && c !== '\\') { st = AUTHORITY; p--; }
                        break;
                case AUTHORITY:
                        if (c === '@') {
                                if (at) buf = '%40' + buf;
                                at = true;
                                t = pw ? -1 : buf.indexOf(':');
                                if (t < 0) url[pw ? 'password' : 'username'] += enc(buf, USERINFO_SET);
                                else {
                                        url.username += enc(buf.slice(0, t), USERINFO_SET);
                                        pw = true;
                                        url.password += enc(buf.slice(t + 1), USERINFO_SET);
                                }
                                buf = '';
                        } else if (c === undefined || c === '/' || c === '?' || c === '#' || c === '\\' && special(url)) {
                                if (at && !buf) return null;
                                p -= buf.length + 1; buf = ''; st = HOST;
                        } else buf += c;
                        break;
                case HOST:
                case HOSTNAME:
                        if (so && url.scheme === 'file') { p--; st = FILE_HOST; }
                        else if (c === ':' && !brk) {
                                if (!buf || so === HOSTNAME) return null;
                                if ((t = parseHost(buf, !special(url))) === null) return null;
                                url.host = t; buf = ''; st = PORT;
                        } else if (c === undefined || c === '/' || c === '?' || c === '#' || c === '\\' && special(url)) {
                                p--;
                                if (!buf && (special(url) || so && (url.username || url.password || url.port !== null))) return null;
                                if ((t = parseHost(buf, !special(url))) === null) return null;
                                url.host = t; buf = ''; st = PATH_START;
                                if (so) return url;
                        } else {
                                if (c === '[') brk = true; else if (c === ']') brk = false;
                                buf += c;
                        }
                        break;
                case PORT:
                        if (c >= '0' && c <= '9') buf += c;
                        else if (c === undefined || c === '/' || c === '?' || c === '#' || c === '\\' && special(url) || so) {
                                if (buf) {
                                        if ((t = parseInt(buf, 10)) > 65535) return null;
                                        url.port = t === DEFPORT[url.scheme] ? null : t;
                                        buf = '';
                                        if (so) return url;
                                }
                                if (so) return null;
                                st = PATH_START; p--;
                        } else return null;
                        break;
                case FILE:
                        url.scheme = 'file'; url.host = '';
                        if (c === '/' || c === '\\') st = FILE_SLASH;
                        else if (base && base.scheme === 'file') {
                                url.host = base.host; url.path = base.path.slice(); url.query = base.query;
                                if (c === '?') { url.query = ''; st = QUERY; }
                                else if (c === '#') { url.fragment = ''; st = FRAGMENT; }
                                else if (c !== undefined) {
                                        url.query = null;
                                        if (!startsWithDrive(input, p)) shorten(url); else url.path = [];
                                        st = PATH; p--;
                                }
                        } else { st = PATH; p--; }
                        break;
                case FILE_SLASH:
                        if (c === '/' || c === '\\') st = FILE_HOST;
                        else {
                                if (base && base.scheme === 'file') {
                                        url.host = base.host;
                                        if (!startsWithDrive(input, p) && base.path.length && isDrive(base.path[0], true)) url.path.push(base.path[0]);
                                }
                                st = PATH; p--;
                        }
                        break;
                case FILE_HOST:
                        if (c === undefined || c === '/' || c === '\\' || c === '?' || c === '#') {
                                p--;
                                if (!so && isDrive(buf)) st = PATH;
                                else if (!buf) { url.host = ''; if (so) return url; st = PATH_START; }
                                else {
                                        if ((t = parseHost(buf, false)) === null) return null;
                                        url.host = t === 'localhost' ? '' : t;
                                        if (so) return url;
                                        buf = ''; st = PATH_START;
                                }
                        } else buf += c;
                        break;
                case PATH_START:
                        if (special(url)) { st = PATH; if (c !== '/' && c !== '\\') p--; }
                        else if (!so && c === '?') { url.query = ''; st = QUERY; }
                        else if (!so && c === '#') { url.fragment = ''; st = FRAGMENT; }
                        else if (c !== undefined) { st = PATH; if (c !== '/') p--; }
                        else if (so && url.host === null) url.path.push('');
                        break;
                case PATH:
                        if (c === undefined || c === '/' || c === '\\' && special(url) || !so && (c === '?' || c === '#')) {
                                t = c === '/' || c === '\\' && special(url);
                                if (isDotDot(buf)) { shorten(url); if (!t) url.path.push(''); }
                                else if (isDot(buf)) { if (!t) url.path.push(''); }
                                else {
                                        if (url.scheme === 'file' && !url.path.length && isDrive(buf)) buf = buf[0] + ':';
                                        url.path.push(enc(buf, PATH_SET));
                                }
                                buf = '';
                                if (c === '?') { url.query = ''; st = QUERY; }
                                else if (c === '#') { url.fragment = ''; st = FRAGMENT; }
                        } else buf += c;
                        break;
                case OPAQUE_PATH:
                        if (c === '?') { url.query = ''; st = QUERY; }
                        else if (c === '#') { url.fragment = ''; st = FRAGMENT; }
                        else if (c !== undefined) {
                                for (t = p; t < n && input[t] !== '?' && input[t] !== '#'; t++);
                                url.path += enc(input.slice(p, t), '');
                                p = t - 1;
                        }
                        break;
                case QUERY:
                        if (!so && c === '#' || c === undefined) {
                                url.query += enc(buf, special(url) ? SQUERY_SET : QUERY_SET); buf = '';
                                if (c === '#') { url.fragment = ''; st = FRAGMENT; }
                        } else {
                                t = so ? -1 : input.indexOf('#', p);
                                if (t < 0) t = n;
                                buf += input.slice(p, t); p = t - 1;
                        }
                        break;
                case FRAGMENT:
                        if (c !== undefined) { url.fragment += enc(input.slice(p), FRAG_SET); p = n - 1; }
                        break;
                }
                if (p >= n) return url;
                p++;
        }
}
function pathSer(u) { return typeof u.path === 'string' ? u.path : u.path.length ? '/' + u.path.join('/') : ''; }
function serialize(u) {
        var o = u.scheme + ':';
        if (u.host !== null) {
                o += '//';
                if (u.username || u.password) o += u.username + (u.password ? ':' + u.password : '') + '@';
                o += u.host + (u.port !== null ? ':' + u.port : '');
        } else if (typeof u.path !== 'string' && u.path.length > 1 && u.path[0] === '') o += '/.';
        o += pathSer(u);
        if (u.query !== null) o += '?' + u.query;
        if (u.fragment !== null) o += '#' + u.fragment;
        return o;
}
function origin(u) {
        if (u.scheme === 'blob') {
                var p = parse(pathSer(u));
                return p && (p.scheme === 'http' || p.scheme === 'https') ? origin(p) : 'null';
        }
        return special(u) && u.scheme !== 'file' ? u.scheme + '://' + u.host + (u.port !== null ? ':' + u.port : '') : 'null';
}
function noCreds(u) { return u.host === null || u.host === '' || u.scheme === 'file'; }
function stripOpaque(u) {
        if (typeof u.path === 'string' && u.fragment === null && u.query === null) u.path = u.path.replace(/ +$/, '');
}
function parseArgs(url, base) {
        var b = null;
        if (base !== undefined && (b = parse(usv(base))) === null) return null;
        return parse(usv(url), b);
}
function invalid() { return new TypeError('Invalid URL'); }
function U(o) { return slot(o, 'URL'); }

class URL {
        constructor(url, base = undefined) {
                need(arguments.length, 1, "Failed to construct 'URL'");
                var r = parseArgs(url, base), q, s;
                if (!r) throw invalid();
                q = { k: 'URLSearchParams', list: r.query ? formParse(r.query) : [], url: null };
                s = { k: 'URL', r: r, q: q, sp: O.create(URLSearchParams.prototype) };
                q.url = s;
                sset(s.sp, q);
                sset(this, s);
        }
        static canParse(url, base = undefined) {
                need(arguments.length, 1, "Failed to execute 'canParse' on 'URL'");
                return parseArgs(url, base) !== null;
        }
        static parse(url, base = undefined) {
                need(arguments.length, 1, "Failed to execute 'parse' on 'URL'");
                try { return new URL(url, base); } catch (e) { return null; }
        }
        toString() { return serialize(U(this).r); }
        get href() { return serialize(U(this).r); }
        set href(v) {
                var s = U(this), r = parse(usv(v));
                if (!r) throw invalid();
                s.r = r;
                s.q.list = r.query ? formParse(r.query) : [];
        }
        get origin() { return origin(U(this).r); }
        get protocol() { return U(this).r.scheme + ':'; }
        set protocol(v) { parse(usv(v) + ':', null, U(this).r, SCHEME_START); }
        get username() { return U(this).r.username; }
        set username(v) { var r = U(this).r; v = usv(v); if (!noCreds(r)) r.username = enc(v, USERINFO_SET); }
        get password() { return U(this).r.password; }
        set password(v) { var r = U(this).r; v = usv(v); if (!noCreds(r)) r.password = enc(v, USERINFO_SET); }
        get host() { var r = U(this).r; return r.host === null ? '' : r.port === null ? r.host : r.host + ':' + r.port; }
        set host(v) { var r = U(this).r; v = usv(v); if (typeof r.path !== 'string') parse(v, null, r, HOST); }
        get hostname() { var h = U(this).r.host; return h === null ? '' : h; }
        set hostname(v) { var r = U(this).r; v = usv(v); if (typeof r.path !== 'string') parse(v, null, r, HOSTNAME); }
        get port() { var p = U(this).r.port; return p === null ? '' : '' + p; }
        set port(v) {
                var r = U(this).r;
                v = usv(v);
                if (noCreds(r)) return;
                if (v === '') r.port = null; else parse(v, null, r, PORT);
        }
        get pathname() { return pathSer(U(this).r); }
        set pathname(v) {
                var r = U(this).r;
                v = usv(v);
                if (typeof r.path === 'string') return;
                r.path = [];
                parse(v, null, r, PATH_START);
        }
        get search() { var q = U(this).r.query; return q ? '?' + q : ''; }
        set search(v) {
                var s = U(this), r = s.r;
                v = usv(v);
                if (v === '') { r.query = null; s.q.list = []; stripOpaque(r); return; }
                if (v[0] === '?') v = v.slice(1);
                r.query = '';
                parse(v, null, r, QUERY);
                s.q.list = formParse(v);
        }
        get searchParams() { return U(this).sp; }
        get hash() { var f = U(this).r.fragment; return f ? '#' + f : ''; }
        set hash(v) {
                var r = U(this).r;
                v = usv(v);
                if (v === '') { r.fragment = null; stripOpaque(r); return; }
                if (v[0] === '#') v = v.slice(1);
                r.fragment = '';
                parse(v, null, r, FRAGMENT);
        }
        toJSON() { return serialize(U(this).r); }
}
webidl(URL, 'URL');
install('URL', URL);

/* ------------------------------------------------------------ URLSearchParams */
function Q(o) { return slot(o, 'URLSearchParams'); }
function update(q) {
        if (!q.url) return;
        var r = q.url.r, s = formSer(q.list);
        r.query = s || null;
        if (!s) stripOpaque(r);
}
var spIterProto;
function spIter(o, kind) {
        if (!spIterProto) {
                spIterProto = O.create(O.getPrototypeOf(O.getPrototypeOf([][Symbol.iterator]())));
                def(spIterProto, 'next', function next() {
                        var s = slot(this, 'URLSearchParams Iterator'), l = s.q.list, p;
                        if (s.i >= l.length) return { value: undefined, done: true };
                        p = l[s.i++];
                        return { value: s.kind === 0 ? p[0] : s.kind === 1 ? p[1] : [p[0], p[1]], done: false };
                });
                dp(spIterProto, Symbol.toStringTag, { value: 'URLSearchParams Iterator', configurable: true });
        }
        var it = O.create(spIterProto);
        sset(it, { k: 'URLSearchParams Iterator', q: Q(o), kind: kind, i: 0 });
        return it;
}

class URLSearchParams {
        constructor(init = '') {
                var l = [], it, k, i, e;
                if (init !== null && (typeof init === 'object' || typeof init === 'function')) {
                        it = init[Symbol.iterator];
                        if (it !== undefined && it !== null) {
                                if (typeof it !== 'function') throw new TypeError('Query pairs must be iterable');
                                for (e of { [Symbol.iterator]: function () { return it.call(init); } }) {
                                        if (e === null || typeof e !== 'object' && typeof e !== 'function' || typeof e[Symbol.iterator] !== 'function')
                                                throw new TypeError('Each query pair must be an iterable [name, value] tuple');
                                        e = Array.from(e);
                                        if (e.length !== 2) throw new TypeError('Each query pair must be an iterable [name, value] tuple');
                                        l.push([usv(e[0]), usv(e[1])]);
                                }
                        } else {
                                k = Reflect.ownKeys(init);
                                for (i = 0; i < k.length; i++) {
                                        e = gopd(init, k[i]);
                                        if (e && e.enumerable) l.push([usv(k[i]), usv(init[k[i]])]);
                                }
                        }
                } else {
                        init = usv(init);
                        l = formParse(init[0] === '?' ? init.slice(1) : init);
                }
                sset(this, { k: 'URLSearchParams', list: l, url: null });
        }
        get size() { return Q(this).list.length; }
        append(name, value) {
                var q = Q(this);
                need(arguments.length, 2, "Failed to execute 'append' on 'URLSearchParams'");
                q.list.push([usv(name), usv(value)]);
                update(q);
        }
        delete(name, value = undefined) {
                var q = Q(this), has = value !== undefined;
                need(arguments.length, 1, "Failed to execute 'delete' on 'URLSearchParams'");
                name = usv(name);
                if (has) value = usv(value);
                q.list = q.list.filter(function (p) { return !(p[0] === name && (!has || p[1] === value)); });
                update(q);
        }
        get(name) {
                var l = Q(this).list, i;
                need(arguments.length, 1, "Failed to execute 'get' on 'URLSearchParams'");
                for (name = usv(name), i = 0; i < l.length; i++) if (l[i][0] === name) return l[i][1];
                return null;
        }
        getAll(name) {
                var l = Q(this).list;
                need(arguments.length, 1, "Failed to execute 'getAll' on 'URLSearchParams'");
                name = usv(name);
                return l.filter(function (p) { return p[0] === name; }).map(function (p) { return p[1]; });
        }
        has(name, value = undefined) {
                var l = Q(this).list, has = value !== undefined, i;
                need(arguments.length, 1, "Failed to execute 'has' on 'URLSearchParams'");
                name = usv(name);
                if (has) value = usv(value);
                for (i = 0; i < l.length; i++) if (l[i][0] === name && (!has || l[i][1] === value)) return true;
                return false;
        }
        set(name, value) {
                var q = Q(this), l, found = false;
                need(arguments.length, 2, "Failed to execute 'set' on 'URLSearchParams'");
                name = usv(name); value = usv(value);
                l = q.list.filter(function (p) {
                        if (p[0] !== name) return true;
                        if (found) return false;
                        p[1] = value;
                        return (found = true);
                });
                if (!found) l.push([name, value]);
                q.list = l;
                update(q);
        }
        sort() {
                var q = Q(this);
                q.list = q.list.slice().sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; });
                update(q);
        }
        entries() { return spIter(this, 2); }
        forEach(callback, thisArg = undefined) {
                var q = Q(this), i, p;
                if (typeof callback !== 'function') throw new TypeError('The "callback" argument must be of type function');
                for (i = 0; i < q.list.length; i++) { p = q.list[i]; callback.call(thisArg, p[1], p[0], this); }
        }
        keys() { return spIter(this, 0); }
        values() { return spIter(this, 1); }
        toString() { return formSer(Q(this).list); }
}
def(URLSearchParams.prototype, Symbol.iterator, URLSearchParams.prototype.entries);
webidl(URLSearchParams, 'URLSearchParams');
install('URLSearchParams', URLSearchParams);

/* ------------------------------------------------------------ structuredClone */
var CLONE_ERRORS = ['Error', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError', 'URIError'];
var NOCLONE = /^(SharedArrayBuffer|Promise|WeakMap|WeakSet|WeakRef|FinalizationRegistry|Symbol|(Async)?Generator|Module|Arguments|.* Iterator|Intl\..*)$/;
var RE_FLAGS = [['hasIndices', 'd'], ['global', 'g'], ['ignoreCase', 'i'], ['multiline', 'm'], ['dotAll', 's'],
        ['unicode', 'u'], ['unicodeSets', 'v'], ['sticky', 'y']];
function dce(v) {
        return domErr((typeof v === 'symbol' ? String(v) : '#<' + toStr.call(v).slice(8, -1) + '>') + ' could not be cloned.', 'DataCloneError');
}
// Brand check: does the intrinsic method/getter f accept v as its receiver?
function brand(f, v) { try { f.call(v); return true; } catch (e) { return false; } }
function put(o, k, v) {
        if (k === '__proto__') dp(o, k, { value: v, writable: true, enumerable: true, configurable: true });
        else o[k] = v;
}
function copyAB(b) {
        var n = abLen(b), r = b.resizable ? new ArrayBuffer(n, { maxByteLength: b.maxByteLength }) : new ArrayBuffer(n);
        new Uint8Array(r).set(new Uint8Array(b));
        return r;
}
function detached(b) { return 'detached' in ArrayBuffer.prototype ? getter(ArrayBuffer.prototype, 'detached').call(b) : false; }
function cloneProps(v, r, mem) {
        var k = O.keys(v), i;
        for (i = 0; i < k.length; i++) if (O.prototype.hasOwnProperty.call(v, k[i])) put(r, k[i], clone(v[k[i]], mem));
        return r;
}
function clone(v, mem) {
        if (typeof v === 'symbol') throw dce(v);
        if (v === null || typeof v !== 'object' && typeof v !== 'function') return v;
        var r = mem.get(v), tag, s, d, P;
        if (r !== undefined) return r;
        if (typeof v === 'function') throw dce(v);
        tag = toStr.call(v).slice(8, -1);
        s = sget(v);
        if (tag === 'Object' && !s) {
                mem.set(v, r = {});
                return cloneProps(v, r, mem);
        }
        if (s) {
                if (s.k !== 'DOMException') throw dce(v);
                r = new DOMEx(s.message, s.name);
                if (typeof v.stack === 'string') def(r, 'stack', v.stack);
        } else if (tag === 'Boolean' && brand(Boolean.prototype.valueOf, v)) r = O(Boolean.prototype.valueOf.call(v));
        else if (tag === 'Number' && brand(Number.prototype.valueOf, v)) r = O(Number.prototype.valueOf.call(v));
        else if (tag === 'BigInt' && brand(BigInt.prototype.valueOf, v)) r = O(BigInt.prototype.valueOf.call(v));
        else if (tag === 'String' && brand(String.prototype.valueOf, v)) r = O(String.prototype.valueOf.call(v));
        else if (tag === 'Date' && brand(Date.prototype.getTime, v)) r = new Date(Date.prototype.getTime.call(v));
        else if (tag === 'RegExp' && v !== RegExp.prototype && brand(getter(RegExp.prototype, 'source'), v)) {
                P = RegExp.prototype;
                r = new RegExp(getter(P, 'source').call(v), RE_FLAGS.reduce(function (f, e) {
                        return gopd(P, e[0]) && getter(P, e[0]).call(v) ? f + e[1] : f;
                }, ''));
        } else if (tag === 'ArrayBuffer' && isAB(v)) {
                if (detached(v)) throw domErr('An ArrayBuffer is detached and could not be cloned.', 'DataCloneError');
                r = copyAB(v);
        } else if (isView(v) && (d = taTag(v) || (tag === 'DataView' && brand(getter(DataView.prototype, 'byteLength'), v) ? 'DataView' : ''))) {
                P = d === 'DataView' ? DataView.prototype : taProto();
                s = clone(getter(P, 'buffer').call(v), mem);
                r = new G[d](s, getter(P, 'byteOffset').call(v), getter(P, d === 'DataView' ? 'byteLength' : 'length').call(v));
        } else if (tag === 'Map' && brand(getter(Map.prototype, 'size'), v)) {
                mem.set(v, r = new Map());
                Array.from(Map.prototype.entries.call(v)).forEach(function (e) { r.set(clone(e[0], mem), clone(e[1], mem)); });
        } else if (tag === 'Set' && brand(getter(Set.prototype, 'size'), v)) {
                mem.set(v, r = new Set());
                Array.from(Set.prototype.values.call(v)).forEach(function (e) { r.add(clone(e, mem)); });
        } else if (tag === 'Error') {
                s = v.name;
                r = new G[CLONE_ERRORS.indexOf(s) >= 0 ? s : 'Error']();
                ['line', 'column', 'stack', 'message'].forEach(function (k) { delete r[k]; });
                mem.set(v, r);
                d = gopd(v, 'message');
                if (d && 'value' in d) def(r, 'message', str(d.value));
                if (typeof (s = v.stack) === 'string') def(r, 'stack', s);
                d = gopd(v, 'cause');
                if (d && 'value' in d) def(r, 'cause', clone(d.value, mem));
        } else if (Array.isArray(v)) {
                mem.set(v, r = new Array(v.length));
                cloneProps(v, r, mem);
        } else if (NOCLONE.test(tag)) throw dce(v);
        else {
                mem.set(v, r = {});
                cloneProps(v, r, mem);
        }
        mem.set(v, r);
        return r;
}
function structuredClone(value, options = undefined) {
        need(arguments.length, 1, "Failed to execute 'structuredClone'");
        var mem = new Map(), list = [], t = dict(options, 'structuredClone').transfer, r;
        if (t !== undefined) {
                if (t === null || typeof t !== 'object' && typeof t !== 'function' || typeof t[Symbol.iterator] !== 'function')
                        throw new TypeError("Failed to execute 'structuredClone': transfer is not iterable");
                list = Array.from(t);
        }
        list.forEach(function (b) {
                if (b === null || typeof b !== 'object' && typeof b !== 'function') throw new TypeError('Transfer list items must be objects');
        });
        list.forEach(function (b) {
                if (!isAB(b)) throw domErr('Value not transferable', 'DataCloneError');
                if (mem.has(b)) throw domErr('Transfer list contains duplicate ArrayBuffer', 'DataCloneError');
                if (detached(b)) throw domErr('An ArrayBuffer is detached and could not be transferred.', 'DataCloneError');
                mem.set(b, copyAB(b));
        });
        r = clone(value, mem);
        list.forEach(function (b) { if (b.transfer) b.transfer(0); });
        return r;
}
install('structuredClone', structuredClone);

/* ------------------------------------------------------------- queueMicrotask */
var P0, then = Promise.prototype.then;
function queueMicrotask(callback) {
        need(arguments.length, 1, "Failed to execute 'queueMicrotask'");
        if (typeof callback !== 'function') throw new TypeError('The "callback" argument must be of type function');
        // An exception becomes a rejection of the derived promise, which a host
        // rejection tracker can report.
        then.call(P0 || (P0 = Promise.resolve()), function () { callback(); });
}
install('queueMicrotask', queueMicrotask);

/* The engine loads this file on first use (engine/prelude.js, web()): it
 * sets __chidoriWebExports to an object for the values defined here, which
 * it takes whatever an agent did to the globals meanwhile. */
var ex = G.__chidoriWebExports;
if (ex !== null && typeof ex === 'object')
        for (var k in out) ex[k] = out[k];
})();
