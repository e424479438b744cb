/* engine/fs.js - node:fs for agents, over the parent's in-memory VFS.
 *
 * Evaluated after web.js and before the prelude.  Defines one hidden global,
 * __chidoriInstallFs(host), which the prelude captures and deletes; it
 * returns { fs, promises }: what require('node:fs') / require('fs') and
 * require('fs/promises') / require('node:fs/promises') give the agent.
 *
 *   host.callSync(op, args) -> value      (throws Error {message, code})
 *   host.call(op, args)     -> Promise<value>
 *   host.reportError(err)   optional: an exception thrown by an agent's
 *                           callback goes there (node would crash with it);
 *                           without it, it rejects an internal promise
 *
 * Every operation is a host call "fs.<op>" answered by effects/fs/vfs.c (the
 * args and values are documented in effects/fs/vfs.h), so the parent owns the
 * state, the journal records it, and replay reproduces it.  Bytes travel
 * as base64.
 *
 * Each operation is written once, as a generator that validates its
 * arguments, yields the host calls it needs ({op, args, ...}) and returns
 * the result; runSync / runAsync drive it with callSync or call, which
 * gives the sync, callback and promise forms the same behaviour.  Argument
 * errors are thrown synchronously by the sync and callback forms and reject
 * the promise forms, as in node.
 *
 * Deviations from node (docs/vfs.md): no Buffer - bytes are Uint8Array; no
 * file descriptors, streams, watchers, symlinks, chmod/chown/utimes; times
 * are a logical clock; '..' is resolved lexically and clamps at "/".
 */
'use strict';
{
const G = globalThis;
const O = Object;
const defineProperty = O.defineProperty;
const getOwnPropertyDescriptor = O.getOwnPropertyDescriptor;
const getPrototypeOf = O.getPrototypeOf;
const freeze = O.freeze;
const create = O.create;
const apply = Reflect.apply;
const hasOwn = O.prototype.hasOwnProperty;
const PromiseC = Promise;
const promiseThen = Promise.prototype.then;
const promiseResolve = Promise.resolve;
const ErrorC = Error;
const TypeErrorC = TypeError;
const RangeErrorC = RangeError;
const StringC = String;
const NumberC = Number;
const BigIntC = BigInt;
const RealDate = Date;
const SymbolC = Symbol;
const fromCharCode = String.fromCharCode;
const strCharCodeAt = String.prototype.charCodeAt;
const strSlice = String.prototype.slice;
const strIndexOf = String.prototype.indexOf;
const strToLowerCase = String.prototype.toLowerCase;
const isInteger = Number.isInteger;
const isView = ArrayBuffer.isView;
const decodeURIComponentF = decodeURIComponent;
const Uint8ArrayC = Uint8Array;
const TypedArrayProto = getPrototypeOf(Uint8Array.prototype);
const taTagGet = getOwnPropertyDescriptor(TypedArrayProto, SymbolC.toStringTag).get;
const taBufferGet = getOwnPropertyDescriptor(TypedArrayProto, 'buffer').get;
const taOffsetGet = getOwnPropertyDescriptor(TypedArrayProto, 'byteOffset').get;
const taLengthGet = getOwnPropertyDescriptor(TypedArrayProto, 'byteLength').get;
const taSubarray = TypedArrayProto.subarray;
const Int16ArrayC = Int16Array;
const ownKeys = Reflect.ownKeys;
const dvBufferGet = getOwnPropertyDescriptor(DataView.prototype, 'buffer').get;
const dvOffsetGet = getOwnPropertyDescriptor(DataView.prototype, 'byteOffset').get;
const dvLengthGet = getOwnPropertyDescriptor(DataView.prototype, 'byteLength').get;
const Uint16ArrayC = Uint16Array;
const ArrayC = Array;
const GenProto = getPrototypeOf(getPrototypeOf((function* () {})()));
const genNext = GenProto.next;
const genThrow = GenProto.throw;

/* errno values (Linux), for err.errno = -ERRNO[code] */
const ERRNO = freeze({
        __proto__: null, EPERM: 1, ENOENT: 2, EIO: 5, EBADF: 9, ENOMEM: 12, EACCES: 13, EBUSY: 16, EEXIST: 17,
        EXDEV: 18, ENOTDIR: 20, EISDIR: 21, EINVAL: 22, EMFILE: 24, EFBIG: 27, ENOSPC: 28, EROFS: 30,
        ENAMETOOLONG: 36, ENOSYS: 38, ENOTEMPTY: 39, ELOOP: 40,
});

const S_IFMT = 0o170000, S_IFREG = 0o100000, S_IFDIR = 0o040000, S_IFLNK = 0o120000;
const constants = freeze({
        __proto__: null,
        F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1,
        COPYFILE_EXCL: 1, COPYFILE_FICLONE: 2, COPYFILE_FICLONE_FORCE: 4,
        O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, O_CREAT: 64, O_EXCL: 128, O_NOCTTY: 256, O_TRUNC: 512,
        O_APPEND: 1024, O_DIRECTORY: 65536, O_NOFOLLOW: 131072, O_SYNC: 1052672, O_DSYNC: 4096,
        S_IFMT, S_IFREG, S_IFDIR, S_IFCHR: 0o020000, S_IFBLK: 0o060000, S_IFIFO: 0o010000, S_IFLNK,
        S_IFSOCK: 0o140000,
        S_IRWXU: 0o700, S_IRUSR: 0o400, S_IWUSR: 0o200, S_IXUSR: 0o100,
        S_IRWXG: 0o070, S_IRGRP: 0o040, S_IWGRP: 0o020, S_IXGRP: 0o010,
        S_IRWXO: 0o007, S_IROTH: 0o004, S_IWOTH: 0o002, S_IXOTH: 0o001,
        UV_FS_COPYFILE_EXCL: 1, UV_FS_COPYFILE_FICLONE: 2, UV_FS_COPYFILE_FICLONE_FORCE: 4,
});

function define(obj, name, value) {
        defineProperty(obj, name, { value, writable: true, enumerable: false, configurable: true });
}
function call(f, self, ...args) {
        return apply(f, self, args);
}
function taTag(v) {
        return call(taTagGet, v);
}
function isUint8Array(v) {
        return taTag(v) === 'Uint8Array';
}
function indexOf(s, x, from) {
        return call(strIndexOf, s, x, from);
}
function slice(s, a, b) {
        return call(strSlice, s, a, b);
}
function code(s, i) {
        return apply(strCharCodeAt, s, [i]);
}

// The code units of s.  When String.prototype.charCodeAt is still the
// intrinsic (a data property: nothing of the agent's can run during the
// loop), call it directly; that is several times faster than through
// Reflect.apply, which the fallback uses.
const StringProto = String.prototype;
function charCodes(s) {
        const n = s.length, out = new Uint16ArrayC(n);
        const d = getOwnPropertyDescriptor(StringProto, 'charCodeAt');
        if (d !== undefined && apply(hasOwn, d, ['value']) && d.value === strCharCodeAt) {
                for (let i = 0; i < n; i++)
                        out[i] = s.charCodeAt(i);
        } else {
                for (let i = 0; i < n; i++)
                        out[i] = apply(strCharCodeAt, s, [i]);
        }
        return out;
}

/* ---------------------------------------------------------- node-style errors */

function describe(v) {
        if (v === null)
                return 'Received null';
        if (v === undefined)
                return 'Received undefined';
        if (typeof v === 'function')
                return 'Received function ' + (typeof v.name === 'string' && v.name ? v.name : '(anonymous)');
        if (typeof v === 'object') {
                let name = '';
                try {
                        const c = v.constructor;
                        if (typeof c === 'function' && typeof c.name === 'string')
                                name = c.name;
                } catch (e) { /* no constructor */ }
                return name ? 'Received an instance of ' + name : 'Received ' + (getPrototypeOf(v) === null ? '[Object: null prototype]' : 'an object');
        }
        let shown = typeof v === 'string' ? "'" + v + "'" : typeof v === 'bigint' ? StringC(v) + 'n' : StringC(v);
        if (shown.length > 28)
                shown = slice(shown, 0, 25) + '...';
        return 'Received type ' + typeof v + ' (' + shown + ')';
}
function showValue(v) {
        if (typeof v === 'string')
                return "'" + v + "'";
        if (typeof v === 'symbol' || typeof v === 'object' || typeof v === 'function')
                return slice(describe(v), 9);
        return StringC(v);
}
function nodeError(C, codeName, message) {
        const e = new C(message);
        define(e, 'code', codeName);
        return e;
}
function invalidArgType(name, what, v) {
        const q = indexOf(name, '.') === -1 ? '"' + name + '" argument' : '"' + name + '" property';
        return nodeError(TypeErrorC, 'ERR_INVALID_ARG_TYPE', 'The ' + q + ' must be ' + what + '. ' + describe(v));
}
function invalidArgValue(name, v, reason) {
        return nodeError(TypeErrorC, 'ERR_INVALID_ARG_VALUE', "The argument '" + name + "' " + reason + '. Received ' + showValue(v));
}
function outOfRange(name, range, v) {
        return nodeError(RangeErrorC, 'ERR_OUT_OF_RANGE', 'The value of "' + name + '" is out of range. It must be ' + range + '. Received ' + showValue(v));
}

// The parent's error ("ENOENT: no such file or directory, open '/x'",
// code "ENOENT") as node's: errno, code, syscall, path[, dest].  Anything
// that is not an fs error (a policy refusal...) passes unchanged.
function fsError(e, c) {
        let codeName, message;
        try {
                codeName = e.code;
                message = e.message;
        } catch (x) {
                return e;
        }
        if (typeof codeName !== 'string' || ERRNO[codeName] === undefined)
                return e;
        message = StringC(message);
        let syscall = c.syscall;
        const comma = indexOf(message, ', ');
        if (comma !== -1) {
                let end = indexOf(message, ' ', comma + 2);
                if (end === -1)
                        end = message.length;
                const word = slice(message, comma + 2, end);
                if (word)
                        syscall = word;
        }
        // A relative path that is not in the VFS: the agent most likely
        // meant a file of the host; say how to reach one.
        if (codeName === 'ENOENT' && typeof c.path === 'string' && c.path !== '' && c.path[0] !== '/')
                message += " (node:fs is the run's own in-memory file system, empty at start; files of the host are " +
                        "reached with chidori.workspace.read(path) when the run has --workspace DIR)";
        const err = new ErrorC(message);
        err.errno = -ERRNO[codeName];
        err.code = codeName;
        err.syscall = syscall;
        if (c.path !== undefined)
                err.path = c.path;
        if (c.dest !== undefined)
                err.dest = c.dest;
        return err;
}

/* ---------------------------------------------------------- bytes */

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
let B64REV = null;  // char code -> 6-bit value, -1; both alphabets

// The string of the first n code units in a typed array.  Chunks go
// through a plain array: apply() takes one much faster than a typed array.
function codesToString(codes, n) {
        const CHUNK = 8192, arr = new ArrayC(n < CHUNK ? n : CHUNK);
        let out = '';
        for (let i = 0; i < n; i += CHUNK) {
                const m = n - i < CHUNK ? n - i : CHUNK;
                if (arr.length !== m)
                        arr.length = m;
                for (let k = 0; k < m; k++)
                        arr[k] = codes[i + k];
                out += apply(fromCharCode, null, arr);
        }
        return out;
}

function base64Encode(b, alphabet, pad) {
        const n = b.length, codes = new Uint8ArrayC(((n + 2) / 3 | 0) * 4);
        let o = 0, i = 0;
        const A = new Uint8ArrayC(64);
        for (let k = 0; k < 64; k++)
                A[k] = code(alphabet, k);
        for (; i + 2 < n; i += 3) {
                const v = b[i] << 16 | b[i + 1] << 8 | b[i + 2];
                codes[o++] = A[v >> 18];
                codes[o++] = A[v >> 12 & 63];
                codes[o++] = A[v >> 6 & 63];
                codes[o++] = A[v & 63];
        }
        if (i < n) {
                const v = b[i] << 16 | (i + 1 < n ? b[i + 1] << 8 : 0);
                codes[o++] = A[v >> 18];
                codes[o++] = A[v >> 12 & 63];
                if (i + 1 < n)
                        codes[o++] = A[v >> 6 & 63];
                else if (pad)
                        codes[o++] = 61;
                if (pad)
                        codes[o++] = 61;
        }
        return codesToString(codes, o);
}

// Lenient, like node's: both alphabets, anything else skipped, stops at '='.
function base64Decode(s) {
        if (B64REV === null) {
                B64REV = new Int16ArrayC(256);
                for (let k = 0; k < 256; k++)
                        B64REV[k] = -1;
                for (let k = 0; k < 64; k++) {
                        B64REV[code(B64, k)] = k;
                        B64REV[code(B64URL, k)] = k;
                }
        }
        const n = s.length, cs = charCodes(s), out = new Uint8ArrayC((n * 3 >> 2) + 3);
        let o = 0, acc = 0, bits = 0;
        for (let i = 0; i < n; i++) {
                const c = cs[i];
                if (c === 61)
                        break;
                const d = c < 256 ? B64REV[c] : -1;
                if (d < 0)
                        continue;
                acc = (acc << 6 | d) & 0xffffff;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = acc >> bits & 0xff;
                }
        }
        return call(taSubarray, out, 0, o);
}

// UTF-8 both ways, here rather than through web.js's TextEncoder/Decoder
// so that nothing an agent can patch runs in between.  A lone surrogate
// encodes as U+FFFD; decoding replaces each maximal invalid subpart with
// U+FFFD (WHATWG, as node does) and keeps a BOM.
function utf8Encode(s) {
        const n = s.length, cs = charCodes(s), out = new Uint8ArrayC(3 * n);
        let o = 0;
        for (let i = 0; i < n; i++) {
                let c = cs[i];
                if (c < 0x80) {
                        out[o++] = c;
                        continue;
                }
                if (c < 0x800) {
                        out[o++] = 0xc0 | c >> 6;
                        out[o++] = 0x80 | c & 63;
                        continue;
                }
                if (c >= 0xd800 && c <= 0xdfff) {
                        const d = c < 0xdc00 && i + 1 < n ? cs[i + 1] : 0;
                        if (d >= 0xdc00 && d <= 0xdfff) {
                                c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
                                i++;
                                out[o++] = 0xf0 | c >> 18;
                                out[o++] = 0x80 | c >> 12 & 63;
                                out[o++] = 0x80 | c >> 6 & 63;
                                out[o++] = 0x80 | c & 63;
                                continue;
                        }
                        c = 0xfffd;
                }
                out[o++] = 0xe0 | c >> 12;
                out[o++] = 0x80 | c >> 6 & 63;
                out[o++] = 0x80 | c & 63;
        }
        return call(taSubarray, out, 0, o);
}

function utf8Decode(b) {
        const n = b.length, out = new Uint16ArrayC(n);
        let o = 0, i = 0;
        while (i < n) {
                const x = b[i];
                if (x < 0x80) {
                        out[o++] = x;
                        i++;
                        continue;
                }
                let need, cp, lo = 0x80, hi = 0xbf;
                if (x >= 0xc2 && x <= 0xdf) {
                        need = 1;
                        cp = x & 0x1f;
                } else if (x >= 0xe0 && x <= 0xef) {
                        need = 2;
                        cp = x & 0x0f;
                        if (x === 0xe0)
                                lo = 0xa0;
                        else if (x === 0xed)
                                hi = 0x9f;
                } else if (x >= 0xf0 && x <= 0xf4) {
                        need = 3;
                        cp = x & 0x07;
                        if (x === 0xf0)
                                lo = 0x90;
                        else if (x === 0xf4)
                                hi = 0x8f;
                } else {
                        out[o++] = 0xfffd;
                        i++;
                        continue;
                }
                let j = i + 1, ok = true;
                for (let k = 0; k < need; k++, j++) {
                        const y = j < n ? b[j] : -1;
                        if (y < lo || y > hi) {
                                ok = false;
                                break;
                        }
                        cp = cp << 6 | y & 63;
                        lo = 0x80;
                        hi = 0xbf;
                }
                i = j;  // an invalid byte is looked at again as a lead
                if (!ok) {
                        out[o++] = 0xfffd;
                } else if (cp >= 0x10000) {
                        cp -= 0x10000;
                        out[o++] = 0xd800 + (cp >> 10);
                        out[o++] = 0xdc00 + (cp & 0x3ff);
                } else {
                        out[o++] = cp;
                }
        }
        return codesToString(out, o);
}

const ENCODINGS = freeze({
        __proto__: null, utf8: 'utf8', 'utf-8': 'utf8', ucs2: 'utf16le', 'ucs-2': 'utf16le', utf16le: 'utf16le',
        'utf-16le': 'utf16le', latin1: 'latin1', binary: 'latin1', base64: 'base64', base64url: 'base64url',
        hex: 'hex', ascii: 'ascii', buffer: 'buffer',
});
// null (bytes) or one of the canonical names above.
function normEncoding(e) {
        if (e === undefined || e === null)
                return null;
        const n = typeof e === 'string' ? ENCODINGS[call(strToLowerCase, e)] : undefined;
        if (n === undefined)
                throw invalidArgValue('encoding', e, 'is invalid encoding');
        return n === 'buffer' ? null : n;
}

function decodeBytes(b, enc) {
        const n = b.length;
        switch (enc) {
        case null:
                return b;
        case 'utf8':
                return utf8Decode(b);
        case 'latin1':
                return codesToString(b, n);
        case 'ascii': {
                const c = new Uint8ArrayC(n);
                for (let i = 0; i < n; i++)
                        c[i] = b[i] & 0x7f;
                return codesToString(c, n);
        }
        case 'hex': {
                const H = charCodes('0123456789abcdef'), c = new Uint8ArrayC(2 * n);
                for (let i = 0; i < n; i++) {
                        c[2 * i] = H[b[i] >> 4];
                        c[2 * i + 1] = H[b[i] & 15];
                }
                return codesToString(c, 2 * n);
        }
        case 'base64':
                return base64Encode(b, B64, true);
        case 'base64url':
                return base64Encode(b, B64URL, false);
        case 'utf16le': {
                let out = '';
                for (let i = 0; i + 1 < n; i += 2)
                        out += fromCharCode(b[i] | b[i + 1] << 8);
                return out;
        }
        }
        throw invalidArgValue('encoding', enc, 'is invalid encoding');
}

function hexValue(c) {
        if (c >= 48 && c <= 57)
                return c - 48;
        c |= 32;
        return c >= 97 && c <= 102 ? c - 87 : -1;
}

function encodeString(s, enc) {
        const n = s.length;
        switch (enc) {
        case null:
        case 'utf8':
                return utf8Encode(s);
        case 'latin1':
        case 'ascii':
                return new Uint8ArrayC(charCodes(s));  // & 0xff by conversion
        case 'hex': {
                const b = new Uint8ArrayC(n >> 1), cs = charCodes(s);
                let o = 0;
                for (; o < b.length; o++) {
                        const h = hexValue(cs[2 * o]), l = hexValue(cs[2 * o + 1]);
                        if (h < 0 || l < 0)
                                break;  // node stops at the first bad pair
                        b[o] = h << 4 | l;
                }
                return call(taSubarray, b, 0, o);
        }
        case 'base64':
        case 'base64url':
                return base64Decode(s);
        case 'utf16le': {
                const b = new Uint8ArrayC(2 * n), cs = charCodes(s);
                for (let i = 0; i < n; i++) {
                        const c = cs[i];
                        b[2 * i] = c & 0xff;
                        b[2 * i + 1] = c >> 8;
                }
                return b;
        }
        }
        throw invalidArgValue('encoding', enc, 'is invalid encoding');
}

// The bytes of a string, TypedArray or DataView (a view, not a copy).
function toBytes(data, enc, name) {
        if (typeof data === 'string')
                return encodeString(data, enc);
        if (isView(data)) {
                if (taTag(data) !== undefined)
                        return new Uint8ArrayC(call(taBufferGet, data), call(taOffsetGet, data), call(taLengthGet, data));
                return new Uint8ArrayC(call(dvBufferGet, data), call(dvOffsetGet, data), call(dvLengthGet, data));
        }
        throw invalidArgType(name, 'of type string or an instance of Buffer, TypedArray, or DataView', data);
}

/* ---------------------------------------------------------- arguments */

function isURLLike(v) {
        if (v === null || typeof v !== 'object')
                return false;
        try {
                return !!(v.href && v.protocol && v.auth === undefined && v.path === undefined);
        } catch (e) {
                return false;
        }
}

function fileURLToPath(url) {
        if (StringC(url.protocol) !== 'file:')
                throw nodeError(TypeErrorC, 'ERR_INVALID_URL_SCHEME', 'The URL must be of scheme file');
        if (StringC(url.hostname) !== '')
                throw nodeError(TypeErrorC, 'ERR_INVALID_FILE_URL_HOST', 'File URL host must be "localhost" or empty on linux');
        const p = StringC(url.pathname);
        for (let i = 0; i + 2 < p.length; i++)
                if (code(p, i) === 37 && code(p, i + 1) === 50 && (code(p, i + 2) | 32) === 102)
                        throw nodeError(TypeErrorC, 'ERR_INVALID_FILE_URL_PATH', 'File URL path must not include encoded / characters');
        return decodeURIComponentF(p);
}

// Lone surrogates become U+FFFD, as node's UTF-8 conversion of a path does
// (and so the JSON of the call is well-formed).
function wellFormed(s) {
        const cs = charCodes(s);
        for (let i = 0; i < cs.length; i++) {
                const c = cs[i];
                if (c < 0xd800 || c > 0xdfff)
                        continue;
                if (c < 0xdc00 && i + 1 < cs.length) {
                        const d = cs[i + 1];
                        if (d >= 0xdc00 && d <= 0xdfff) {
                                i++;
                                continue;
                        }
                }
                return utf8Decode(utf8Encode(s));
        }
        return s;
}

// A path argument: a string, a Uint8Array (UTF-8) or a file: URL.
function toPath(v, name) {
        let s;
        if (typeof v === 'string')
                s = v;
        else if (isUint8Array(v))
                s = utf8Decode(v);
        else if (isURLLike(v))
                s = fileURLToPath(v);
        else
                throw invalidArgType(name, 'of type string or an instance of Buffer or URL', v);
        if (indexOf(s, '\u0000') !== -1)
                throw invalidArgValue(name, s, 'must be a string, Uint8Array, or URL without null bytes');
        return wellFormed(s);
}

// options: undefined/null/a function (a callback in its place) give the
// defaults, a string is the encoding, an object overrides the keys it has.
// defaults: a null-prototype object (for-in then sees only its keys).
function getOptions(options, defaults) {
        const o = create(null);
        for (const k in defaults)
                o[k] = defaults[k];
        if (options === undefined || options === null || typeof options === 'function')
                return o;
        if (typeof options === 'string') {
                o.encoding = options;
                return o;
        }
        if (typeof options !== 'object')
                throw invalidArgType('options', 'one of type string or an instance of Object', options);
        for (const k in defaults) {
                const v = options[k];
                if (v !== undefined)
                        o[k] = v;
        }
        return o;
}

function toBool(v) {
        return !!v;
}

// node's parseFileMode: an integer or an octal string; def when undefined.
function parseMode(v, name, def) {
        if (v === undefined || v === null)
                return def;
        if (typeof v === 'string') {
                let ok = v.length > 0;
                for (let i = 0; i < v.length; i++)
                        if (code(v, i) < 48 || code(v, i) > 55)
                                ok = false;
                if (!ok)
                        throw invalidArgValue(name, v, 'must be a 32-bit unsigned integer or an octal string');
                v = NumberC.parseInt(v, 8);
        }
        if (typeof v !== 'number')
                throw invalidArgType(name, 'of type number', v);
        if (!isInteger(v) || v < 0 || v > 0xffffffff)
                throw outOfRange(name, '>= 0 && <= 4294967295', v);
        return v & 0o7777;
}

function intIn(v, name, min, max, def) {
        if (v === undefined)
                return def;
        if (typeof v !== 'number')
                throw invalidArgType(name, 'of type number', v);
        if (!isInteger(v) || v < min || v > max)
                throw outOfRange(name, '>= ' + min + ' && <= ' + max, v);
        return v;
}

// A write flag as the parent's "w" | "wx" | "a" | "ax".
const WRITE_FLAGS = freeze({
        __proto__: null, w: 'w', 'w+': 'w', wx: 'wx', xw: 'wx', 'wx+': 'wx', 'xw+': 'wx',
        a: 'a', 'a+': 'a', as: 'a', sa: 'a', 'as+': 'a', 'sa+': 'a', ax: 'ax', xa: 'ax', 'ax+': 'ax', 'xa+': 'ax',
});
function writeFlag(f, def) {
        if (f === undefined || f === null)
                return def;
        if (typeof f === 'number') {
                const a = (f & constants.O_APPEND) !== 0, x = (f & constants.O_EXCL) !== 0;
                return (a ? 'a' : 'w') + (x ? 'x' : '');
        }
        const v = typeof f === 'string' ? WRITE_FLAGS[f] : undefined;
        if (v === undefined)
                throw invalidArgValue('flags', f, typeof f === 'string' && indexOf(f, 'r') !== -1 ?
                        'is invalid (read flags are not supported for writing in chidori)' : 'is invalid');
        return v;
}

function needCallback(cb) {
        if (typeof cb !== 'function')
                throw invalidArgType('cb', 'of type function', cb);
        return cb;
}

/* ---------------------------------------------------------- Stats, Dirent */

function modeOf(s) {
        const m = s.mode;
        return typeof m === 'bigint' ? NumberC(m) : m;
}
function isKind(s, k) {
        return (modeOf(s) & S_IFMT) === k;
}

function Stats() {
}
function BigIntStats() {
}
const statsMethods = {
        isFile() { return isKind(this, S_IFREG); },
        isDirectory() { return isKind(this, S_IFDIR); },
        isSymbolicLink() { return isKind(this, S_IFLNK); },
        isBlockDevice() { return isKind(this, constants.S_IFBLK); },
        isCharacterDevice() { return isKind(this, constants.S_IFCHR); },
        isFIFO() { return isKind(this, constants.S_IFIFO); },
        isSocket() { return isKind(this, constants.S_IFSOCK); },
};
for (const k in statsMethods) {
        define(Stats.prototype, k, statsMethods[k]);
        define(BigIntStats.prototype, k, statsMethods[k]);
}

function num(v) {
        const n = NumberC(v);
        return n === n ? n : 0;
}

function makeStats(v, bigint) {
        const size = num(v.size);
        const f = {
                __proto__: null, dev: 0, mode: num(v.mode), nlink: num(v.nlink), uid: 0, gid: 0, rdev: 0, blksize: 4096,
                ino: num(v.ino), size, blocks: (size + 511) / 512 | 0,
                atimeMs: num(v.atimeMs), mtimeMs: num(v.mtimeMs), ctimeMs: num(v.ctimeMs),
                birthtimeMs: num(v.birthtimeMs),
        };
        const s = bigint ? new BigIntStats() : new Stats();
        for (const k in f)
                s[k] = bigint ? BigIntC(f[k]) : f[k];
        if (bigint) {
                s.atimeNs = BigIntC(f.atimeMs) * 1000000n;
                s.mtimeNs = BigIntC(f.mtimeMs) * 1000000n;
                s.ctimeNs = BigIntC(f.ctimeMs) * 1000000n;
                s.birthtimeNs = BigIntC(f.birthtimeMs) * 1000000n;
        }
        s.atime = new RealDate(f.atimeMs);
        s.mtime = new RealDate(f.mtimeMs);
        s.ctime = new RealDate(f.ctimeMs);
        s.birthtime = new RealDate(f.birthtimeMs);
        return s;
}

const kType = SymbolC('type');
const DIRENT_FILE = 1, DIRENT_DIR = 2;
function Dirent(name, type, parentPath) {
        this.name = name;
        this.parentPath = parentPath;
        this.path = parentPath;
        this[kType] = type;
}
const direntMethods = {
        isFile() { return this[kType] === DIRENT_FILE; },
        isDirectory() { return this[kType] === DIRENT_DIR; },
        isSymbolicLink() { return false; },
        isBlockDevice() { return false; },
        isCharacterDevice() { return false; },
        isFIFO() { return false; },
        isSocket() { return false; },
};
for (const k in direntMethods)
        define(Dirent.prototype, k, direntMethods[k]);

/* ---------------------------------------------------------- operations */

// One host call as an operation yields it: `path`/`dest` are what errors
// report, `syscall` the fallback when the message names none.
function hc(op, args, syscall, path, dest) {
        return { op: 'fs.' + op, args, syscall, path, dest };
}

function joinPath(dir, name) {
        return dir.length && code(dir, dir.length - 1) === 47 ? dir + name : dir + '/' + name;
}

// Lexical normalisation as the parent does it (cwd "/", '..' clamps).
function normalize(p) {
        const parts = [];
        let n = 0, i = 0;
        while (i <= p.length) {
                let j = indexOf(p, '/', i);
                if (j === -1)
                        j = p.length;
                const c = slice(p, i, j);
                i = j + 1;
                if (c === '' || c === '.')
                        continue;
                if (c === '..') {
                        if (n)
                                n--;
                        continue;
                }
                parts[n++] = c;
        }
        let out = '';
        for (let k = 0; k < n; k++)
                out += '/' + parts[k];
        return out || '/';
}

function* readFileOp(path, options) {
        const p = toPath(path, 'path');
        const o = getOptions(options, { __proto__: null, encoding: null, flag: 'r' });
        const enc = normEncoding(o.encoding);
        const v = yield hc('readFile', { path: p }, 'open', p);
        return decodeBytes(base64Decode(StringC(v.data_base64)), enc);
}

// writeFile and appendFile: {path, data_base64[, flag][, mode]}, the flag
// sent only when it is not the op's default ("w" / "a").
function* writeOp(op, path, data, options, defFlag) {
        const p = toPath(path, 'path');
        const o = getOptions(options, { __proto__: null, encoding: 'utf8', mode: undefined, flag: defFlag });
        const enc = normEncoding(o.encoding);
        const bytes = toBytes(data, enc, 'data');
        const flag = writeFlag(o.flag, defFlag);
        const mode = parseMode(o.mode, 'mode', undefined);
        const args = { path: p, data_base64: base64Encode(bytes, B64, true) };
        if (flag !== defFlag)
                args.flag = flag;
        if (mode !== undefined)
                args.mode = mode;
        yield hc(op, args, 'open', p);
}

function writeFileOp(path, data, options) {
        return writeOp('writeFile', path, data, options, 'w');
}

function appendFileOp(path, data, options) {
        return writeOp('appendFile', path, data, options, 'a');
}

function* accessOp(path, mode) {
        const p = toPath(path, 'path');
        const m = intIn(mode, 'mode', 0, 7, 0);
        yield hc('access', { path: p, mode: m }, 'access', p);
}

function* existsOp(path) {
        let p;
        try {
                p = toPath(path, 'path');
        } catch (e) {
                return false;
        }
        try {
                return (yield hc('exists', { path: p }, 'access', p)) === true;
        } catch (e) {
                return false;
        }
}

function* mkdirOp(path, options) {
        const p = toPath(path, 'path');
        let recursive = false, mode = 0o777;
        if (typeof options === 'number' || typeof options === 'string') {
                mode = parseMode(options, 'mode', 0o777);
        } else if (options !== undefined && options !== null && typeof options !== 'function') {
                if (typeof options !== 'object')
                        throw invalidArgType('options', 'one of type string or an instance of Object', options);
                recursive = options.recursive;
                if (recursive === undefined)
                        recursive = false;
                if (typeof recursive !== 'boolean')
                        throw invalidArgType('options.recursive', 'of type boolean', recursive);
                mode = parseMode(options.mode, 'mode', 0o777);
        }
        const v = yield hc('mkdir', { path: p, recursive, mode }, 'mkdir', p);
        return typeof v === 'string' ? v : undefined;
}

function* mkdtempOp(prefix, options, state) {
        const o = getOptions(options, { __proto__: null, encoding: 'utf8' });
        const enc = normEncoding(o.encoding);
        const pre = toPath(prefix, 'prefix');
        const CH = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
        for (let attempt = 0; ; attempt++) {
                // Deterministic names (replay reruns the same sequence).
                let x = state.seq = (state.seq * 1103515245 + 12345) % 2147483648, suffix = '';
                for (let k = 0; k < 6; k++, x = x / 62 | 0)
                        suffix += CH[x % 62];
                const p = pre + suffix;
                try {
                        yield hc('mkdir', { path: p, recursive: false, mode: 0o700 }, 'mkdtemp', pre + 'XXXXXX');
                        return enc === null ? utf8Encode(p) : enc === 'utf8' ? p : decodeBytes(utf8Encode(p), enc);
                } catch (e) {
                        if (e.code !== 'EEXIST' || attempt >= 100)
                                throw e;
                }
        }
}

function direntList(v, withTypes, enc, dir) {
        const out = [];
        const n = v.length;
        for (let i = 0; i < n; i++) {
                const e = v[i];
                const name = withTypes ? StringC(e.name) : StringC(e);
                const shown = enc === 'utf8' ? name : decodeBytes(utf8Encode(name), enc);
                out[i] = withTypes ? new Dirent(shown, e.type === 'dir' ? DIRENT_DIR : DIRENT_FILE, dir) : shown;
        }
        return out;
}

function* readdirOp(path, options) {
        const p = toPath(path, 'path');
        const o = getOptions(options, { __proto__: null, encoding: 'utf8', withFileTypes: false, recursive: false });
        const enc = normEncoding(o.encoding);
        const types = toBool(o.withFileTypes);
        if (!o.recursive) {
                const v = yield hc('readdir', { path: p, withFileTypes: types }, 'scandir', p);
                return direntList(v, types, enc, p);
        }
        // Breadth first, as node's readdir({recursive}) does.
        const out = [], queue = [p], rel = [''];
        for (let q = 0; q < queue.length; q++) {
                const dir = queue[q];
                const v = yield hc('readdir', { path: dir, withFileTypes: true }, 'scandir', dir);
                for (let i = 0; i < v.length; i++) {
                        const name = StringC(v[i].name), isDir = v[i].type === 'dir';
                        const r = rel[q] ? rel[q] + '/' + name : name;
                        if (types)
                                out[out.length] = new Dirent(enc === 'utf8' ? name : decodeBytes(utf8Encode(name), enc),
                                        isDir ? DIRENT_DIR : DIRENT_FILE, dir);
                        else
                                out[out.length] = enc === 'utf8' ? r : decodeBytes(utf8Encode(r), enc);
                        if (isDir) {
                                queue[queue.length] = joinPath(dir, name);
                                rel[rel.length] = r;
                        }
                }
        }
        return out;
}

function* statOp(op, path, options) {
        const p = toPath(path, 'path');
        const o = getOptions(options, { __proto__: null, bigint: false, throwIfNoEntry: true });
        try {
                const v = yield hc(op, { path: p }, op, p);
                return makeStats(v, toBool(o.bigint));
        } catch (e) {
                if (o.throwIfNoEntry === false && (e.code === 'ENOENT' || e.code === 'ENOTDIR'))
                        return undefined;
                throw e;
        }
}

function* unlinkOp(path) {
        const p = toPath(path, 'path');
        yield hc('unlink', { path: p }, 'unlink', p);
}

function* rmdirOp(path, options) {
        const p = toPath(path, 'path');
        const o = getOptions(options, { __proto__: null, recursive: false, maxRetries: 0, retryDelay: 100 });
        if (o.recursive === true) /* deprecated in node: rm -r without force */
                yield hc('rm', { path: p, recursive: true, force: false }, 'rmdir', p);
        else
                yield hc('rmdir', { path: p }, 'rmdir', p);
}

function* rmOp(path, options) {
        const p = toPath(path, 'path');
        const o = getOptions(options, { __proto__: null, recursive: false, force: false, maxRetries: 0, retryDelay: 100 });
        if (typeof o.recursive !== 'boolean')
                throw invalidArgType('options.recursive', 'of type boolean', o.recursive);
        if (typeof o.force !== 'boolean')
                throw invalidArgType('options.force', 'of type boolean', o.force);
        yield hc('rm', { path: p, recursive: o.recursive, force: o.force }, 'rm', p);
}

function* renameOp(oldPath, newPath) {
        const from = toPath(oldPath, 'oldPath'), to = toPath(newPath, 'newPath');
        yield hc('rename', { from, to }, 'rename', from, to);
}

function* copyFileOp(src, dest, mode) {
        const from = toPath(src, 'src'), to = toPath(dest, 'dest');
        const m = intIn(mode, 'mode', 0, 7, 0);
        yield hc('copyFile', { from, to, flags: m & constants.COPYFILE_EXCL }, 'copyfile', from, to);
}

function* realpathOp(path, options) {
        const p = toPath(path, 'path');
        const o = getOptions(options, { __proto__: null, encoding: 'utf8' });
        const enc = normEncoding(o.encoding);
        yield hc('lstat', { path: p }, 'lstat', p);
        const r = normalize(p);
        return enc === 'utf8' ? r : decodeBytes(utf8Encode(r), enc);
}

/* ---------------------------------------------------------- drivers */

function makeDrivers(host) {
        const hostCall = host.call, hostCallSync = host.callSync, hostReportError = host.reportError;
        if (typeof hostCall !== 'function' || typeof hostCallSync !== 'function')
                throw new TypeErrorC('__chidoriInstallFs: host.call and host.callSync must be functions');

        function runSync(gen) {
                let r = call(genNext, gen);
                while (!r.done) {
                        const c = r.value;
                        let v, failed = false;
                        try {
                                v = call(hostCallSync, host, c.op, c.args);
                        } catch (e) {
                                failed = true;
                                v = fsError(e, c);
                        }
                        r = failed ? call(genThrow, gen, v) : call(genNext, gen, v);
                }
                return r.value;
        }

        // Continue from `r` (the generator's last step) asynchronously.
        function drive(gen, r, resolve, reject) {
                function step(method, arg) {
                        let s;
                        try {
                                s = call(method, gen, arg);
                        } catch (e) {
                                reject(e);
                                return;
                        }
                        go(s);
                }
                function go(s) {
                        if (s.done) {
                                resolve(s.value);
                                return;
                        }
                        const c = s.value;
                        let p;
                        try {
                                p = call(hostCall, host, c.op, c.args);
                        } catch (e) {
                                step(genThrow, fsError(e, c));
                                return;
                        }
                        call(promiseThen, call(promiseResolve, PromiseC, p), (v) => step(genNext, v),
                                (e) => step(genThrow, fsError(e, c)));
                }
                go(r);
        }

        function runPromise(make, args) {
                return new PromiseC((resolve, reject) => {
                        let gen, r;
                        try {
                                gen = apply(make, undefined, args);
                                r = call(genNext, gen);
                        } catch (e) {
                                reject(e);
                                return;
                        }
                        drive(gen, r, resolve, reject);
                });
        }

        // An agent's callback, its exception reported (not swallowed).
        function callBack(cb, args) {
                try {
                        apply(cb, undefined, args);
                } catch (e) {
                        if (typeof hostReportError !== 'function')
                                throw e;
                        call(hostReportError, host, e);
                }
        }

        // Arguments are checked now (a TypeError is thrown to the caller);
        // cb always runs later, from a promise job, as (err) / (null, value).
        function runCallback(make, args, cb) {
                const gen = apply(make, undefined, args);
                const r = call(genNext, gen);
                const p = new PromiseC((resolve, reject) => drive(gen, r, resolve, reject));
                call(promiseThen, p, (v) => callBack(cb, v === undefined ? [null] : [null, v]), (e) => callBack(cb, [e]));
        }

        return { runSync, runPromise, runCallback, callBack };
}

/* ---------------------------------------------------------- the modules */

function nameFn(f, name, length) {
        defineProperty(f, 'name', { value: name, configurable: true });
        defineProperty(f, 'length', { value: length, configurable: true });
        return f;
}

// name, generator, arguments (the sync form's length), required arguments
const OPS = [
        ['readFile', readFileOp, 2, 1],
        ['writeFile', writeFileOp, 3, 2],
        ['appendFile', appendFileOp, 3, 2],
        ['access', accessOp, 2, 1],
        ['mkdir', mkdirOp, 2, 1],
        ['readdir', readdirOp, 2, 1],
        ['stat', function (path, options) { return statOp('stat', path, options); }, 2, 1],
        ['lstat', function (path, options) { return statOp('lstat', path, options); }, 2, 1],
        ['unlink', unlinkOp, 1, 1],
        ['rmdir', rmdirOp, 2, 1],
        ['rm', rmOp, 2, 1],
        ['rename', renameOp, 2, 2],
        ['copyFile', copyFileOp, 3, 2],
        ['realpath', realpathOp, 2, 1],
];

function install(host) {
        if (host === null || typeof host !== 'object')
                throw new TypeErrorC('__chidoriInstallFs: a host object is required');
        const { runSync, runPromise, runCallback, callBack } = makeDrivers(host);
        const fs = {}, promises = {};
        const mkdtempState = { seq: 42 };
        const mkdtemp = (prefix, options) => mkdtempOp(prefix, options, mkdtempState);

        function addOp(name, make, arity, required) {
                define(fs, name + 'Sync', nameFn(function (...args) {
                        return runSync(apply(make, undefined, args));
                }, name + 'Sync', arity));
                define(promises, name, nameFn(function (...args) {
                        return runPromise(make, args);
                }, name, arity));
                define(fs, name, nameFn(function (...args) {
                        // The callback is the last argument after the required
                        // ones; optional ones may be left out or undefined.
                        let n = args.length;
                        while (n > 0 && args[n - 1] === undefined)
                                n--;
                        const cb = needCallback(n > required ? args[n - 1] : undefined);
                        const rest = [];
                        for (let i = 0; i < n - 1; i++)
                                rest[i] = args[i];
                        runCallback(make, rest, cb);
                }, name, arity + 1));
        }
        for (let i = 0; i < OPS.length; i++)
                addOp(OPS[i][0], OPS[i][1], OPS[i][2], OPS[i][3]);
        addOp('mkdtemp', mkdtemp, 2, 1);
        define(fs.realpathSync, 'native', fs.realpathSync);
        define(fs.realpath, 'native', fs.realpath);

        define(fs, 'existsSync', nameFn(function (path) {
                return runSync(existsOp(path));
        }, 'existsSync', 1));
        // Deprecated in node and unlike the others: cb(exists), no error.
        define(fs, 'exists', nameFn(function (path, cb) {
                needCallback(cb);
                call(promiseThen, runPromise(existsOp, [path]), (v) => callBack(cb, [v]), () => callBack(cb, [false]));
        }, 'exists', 2));

        define(fs, 'constants', constants);
        define(promises, 'constants', constants);
        define(fs, 'F_OK', constants.F_OK);
        define(fs, 'R_OK', constants.R_OK);
        define(fs, 'W_OK', constants.W_OK);
        define(fs, 'X_OK', constants.X_OK);
        define(fs, 'Stats', Stats);
        define(fs, 'Dirent', Dirent);
        define(fs, 'promises', promises);
        // Object.keys(fs) lists the API, as in node.
        const keys = ownKeys(fs), pkeys = ownKeys(promises);
        for (let i = 0; i < keys.length; i++)
                defineProperty(fs, keys[i], { enumerable: keys[i] !== 'Stats' && keys[i] !== 'Dirent' });
        for (let i = 0; i < pkeys.length; i++)
                defineProperty(promises, pkeys[i], { enumerable: true });
        return { fs, promises };
}

defineProperty(G, '__chidoriInstallFs', { value: install, writable: true, enumerable: false, configurable: true });
}
