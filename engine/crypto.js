/* engine/crypto.js - node:crypto for agents: hashes, HMAC, randomness.
 *
 * Evaluated by the engine after web.js and before the prelude.  It defines
 * one hidden global, __chidoriInstallCrypto(host), which the prelude takes
 * and deletes before agent code runs.  Calling it returns
 *   { module, subtle }
 * `module` is what require('node:crypto') / require('crypto') returns and
 * `subtle` is what globalThis.crypto.subtle should be (module.subtle and
 * module.webcrypto.subtle are the same object).
 *
 * host (supplied by the prelude):
 *   getRandomValues(u8)  fill a Uint8Array of at most 65536 bytes with
 *                        randomness from the parent (a recorded host call)
 *   randomUUID()         a v4 UUID string
 * These are the only sources of randomness: every byte an agent sees comes
 * from the parent and is replayed from the journal.  Hashing is pure and
 * runs here, in JS.
 *
 * What is here: createHash / hash (md5, sha1, sha224, sha256, sha384,
 * sha512), createHmac, getHashes, randomBytes, randomFill(Sync), randomInt,
 * randomUUID, getRandomValues, timingSafeEqual, webcrypto, subtle.digest.
 * Known deviations from Node (see docs/crypto.md):
 * - There is no Buffer: digest() without an encoding, randomBytes() and
 *   hash(..., 'buffer') return a Uint8Array.
 * - Hash and Hmac objects are not streams (no write/end/pipe).
 * - Algorithm names are Node's short names, case-insensitive; OpenSSL
 *   aliases ('sha-256', 'RSA-SHA256', ...) are not accepted.
 * - update() also takes an ArrayBuffer (Node throws).
 * - The rest of node:crypto (ciphers, keys, signatures, KDFs) and of
 *   SubtleCrypto (everything but digest) is absent.
 *
 * Implementation notes: SHA-384/512 work on pairs of 32-bit halves (no
 * BigInt); every algorithm compresses whole blocks straight from the
 * caller's bytes and only copies a partial block.  Strings are UTF-8
 * encoded in chunks into a scratch buffer.  Intrinsics are captured when
 * this file loads; tables are built on first use, so loading costs only
 * the parse.
 */
'use strict';
{
const G = globalThis;
const O = Object;
const defineProperty = O.defineProperty;
const getOwnPropertyDescriptor = O.getOwnPropertyDescriptor;
const getPrototypeOf = O.getPrototypeOf;
const apply = Reflect.apply;
const ErrorC = Error;
const TypeErrorC = TypeError;
const RangeErrorC = RangeError;
const StringC = String;
const PromiseC = Promise;
const promiseResolve = Promise.resolve;
const promiseReject = Promise.reject;
const promiseThen = Promise.prototype.then;
const Uint8ArrayC = Uint8Array;
const Int32ArrayC = Int32Array;
const ArrayBufferC = ArrayBuffer;
const isView = ArrayBuffer.isView;
const isSafeInteger = Number.isSafeInteger;
const floor = Math.floor;
const fromCharCode = String.fromCharCode;
const StringProto = String.prototype;
const charCodeAt = StringProto.charCodeAt;
const toLowerCase = StringProto.toLowerCase;
const stringSlice = StringProto.slice;
const TypedArrayProto = getPrototypeOf(Uint8Array.prototype);
const taTagGet = getOwnPropertyDescriptor(TypedArrayProto, Symbol.toStringTag).get;
const taBufferGet = getOwnPropertyDescriptor(TypedArrayProto, 'buffer').get;
const taByteOffsetGet = getOwnPropertyDescriptor(TypedArrayProto, 'byteOffset').get;
const taByteLengthGet = getOwnPropertyDescriptor(TypedArrayProto, 'byteLength').get;
const dvBufferGet = getOwnPropertyDescriptor(DataView.prototype, 'buffer').get;
const dvByteOffsetGet = getOwnPropertyDescriptor(DataView.prototype, 'byteOffset').get;
const dvByteLengthGet = getOwnPropertyDescriptor(DataView.prototype, 'byteLength').get;
const abByteLengthGet = getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
const DOMExceptionC = G.DOMException;                 // from web.js
const TextDecoderC = G.TextDecoder;                   // from web.js
const tdDecode = TextDecoderC && TextDecoderC.prototype.decode;
const queueMicrotaskF = G.queueMicrotask;             // from web.js
const toStringTag = Symbol.toStringTag;
const hasOwn = O.prototype.hasOwnProperty;
const objToString = O.prototype.toString;
function hasOwnCall(o, k) {
        return apply(hasOwn, o, [k]);
}

/* ------------------------------------------------------------- errors */

// Node's ERR_* errors: the usual constructor plus an own `code`.
function nodeError(C, code, message) {
        const e = new C(message);
        defineProperty(e, 'code', { value: code, writable: true, enumerable: true, configurable: true });
        return e;
}
function domException(message, name) {
        if (typeof DOMExceptionC === 'function')
                return new DOMExceptionC(message, name);
        const e = new ErrorC(message);
        e.name = name;
        return e;
}
// Node's "Received ..." suffix, roughly as lib/internal/errors.js words it.
function received(v) {
        if (v === null || v === undefined)
                return ' Received ' + v;
        if (typeof v === 'function')
                return ' Received function ' + (v.name || '<anonymous>');
        if (typeof v === 'object') {
                const c = v.constructor;
                if (c && typeof c.name === 'string' && c.name !== '')
                        return ' Received an instance of ' + c.name;
                return ' Received ' + StringC(apply(objToString, v, []));
        }
        let s = typeof v === 'string' ? "'" + v + "'" : typeof v === 'bigint' ? v + 'n' : StringC(v);
        if (s.length > 28)
                s = apply(stringSlice, s, [0, 25]) + '...';
        return ' Received type ' + typeof v + ' (' + s + ')';
}
function argType(name, what, v) {
        return nodeError(TypeErrorC, 'ERR_INVALID_ARG_TYPE', 'The "' + name + '" argument must be ' + what + '.' + received(v));
}
// Integers above 2^32 get Node's digit separators: 281_474_976_710_656.
function fmtNumber(n) {
        let s = StringC(n);
        if (!(n === floor(n) && (n > 4294967296 || n < -4294967296) && n < 1e21 && n > -1e21))
                return s;
        let out = '', i = s.length;
        const start = s[0] === '-' ? 1 : 0;
        for (; i >= start + 4; i -= 3)
                out = '_' + apply(stringSlice, s, [i - 3, i]) + out;
        return apply(stringSlice, s, [0, i]) + out;
}
function outOfRange(name, range, v) {
        return nodeError(RangeErrorC, 'ERR_OUT_OF_RANGE', 'The value of "' + name + '" is out of range. It must be ' +
                         range + '. Received ' + (typeof v === 'number' ? fmtNumber(v) : StringC(v)));
}
function finalized() {
        return nodeError(ErrorC, 'ERR_CRYPTO_HASH_FINALIZED', 'Digest already called');
}

/* ------------------------------------------------------------- bytes */

// A Uint8Array over the bytes of any ArrayBufferView (or, if `orBuffer`,
// ArrayBuffer); undefined for anything else.
function bytesOf(v, orBuffer) {
        if (v === null || typeof v !== 'object')
                return undefined;
        if (isView(v)) {
                if (apply(taTagGet, v, []) !== undefined)
                        return new Uint8ArrayC(apply(taBufferGet, v, []), apply(taByteOffsetGet, v, []), apply(taByteLengthGet, v, []));
                return new Uint8ArrayC(apply(dvBufferGet, v, []), apply(dvByteOffsetGet, v, []), apply(dvByteLengthGet, v, []));
        }
        if (orBuffer) {
                try {
                        apply(abByteLengthGet, v, []);
                } catch (e) {
                        return undefined;
                }
                return new Uint8ArrayC(v);
        }
        return undefined;
}

// Node's encoding names (normalizeEncoding), case-insensitive.
const ENCODINGS = {
        utf8: 'utf8', 'utf-8': 'utf8', ucs2: 'utf16le', 'ucs-2': 'utf16le', utf16le: 'utf16le', 'utf-16le': 'utf16le',
        latin1: 'latin1', binary: 'latin1', base64: 'base64', base64url: 'base64url', hex: 'hex', ascii: 'ascii',
};
function normEncoding(enc) {
        const e = apply(toLowerCase, StringC(enc), []);
        return hasOwnCall(ENCODINGS, e) ? ENCODINGS[e] : undefined;
}

// String.prototype.charCodeAt through apply() is several times slower than
// a plain call; use the plain call while nobody has replaced it.
let plainCharCodeAt = true;
function checkCharCodeAt() {
        plainCharCodeAt = StringProto.charCodeAt === charCodeAt;
}
function cc(s, i) {
        return plainCharCodeAt ? s.charCodeAt(i) : apply(charCodeAt, s, [i]);
}

// UTF-8 of s[start, end) into out at 0; returns the byte count (at most
// 3 * (end - start)).  Lone surrogates become U+FFFD, as in Node; a pair
// split at `end` is two lone surrogates, so callers keep pairs together.
function utf8Write(s, start, end, out) {
        let j = 0;
        for (let i = start; i < end; i++) {
                let c = cc(s, i);
                if (c < 0x80) {
                        out[j++] = c;
                } else if (c < 0x800) {
                        out[j++] = 0xc0 | (c >> 6);
                        out[j++] = 0x80 | (c & 63);
                } else {
                        if (c >= 0xd800 && c < 0xe000) {
                                const d = i + 1 < end ? cc(s, i + 1) : 0;
                                if (c < 0xdc00 && d >= 0xdc00 && d < 0xe000) {
                                        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
                                        i++;
                                        out[j++] = 0xf0 | (c >> 18);
                                        out[j++] = 0x80 | ((c >> 12) & 63);
                                        out[j++] = 0x80 | ((c >> 6) & 63);
                                        out[j++] = 0x80 | (c & 63);
                                        continue;
                                }
                                c = 0xfffd;
                        }
                        out[j++] = 0xe0 | (c >> 12);
                        out[j++] = 0x80 | ((c >> 6) & 63);
                        out[j++] = 0x80 | (c & 63);
                }
        }
        return j;
}
function utf8Length(s) {
        let n = 0;
        for (let i = 0; i < s.length; i++) {
                const c = cc(s, i);
                if (c < 0x80) {
                        n += 1;
                } else if (c < 0x800) {
                        n += 2;
                } else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
                        const d = cc(s, i + 1);
                        if (d >= 0xdc00 && d < 0xe000) {
                                n += 4;
                                i++;
                        } else {
                                n += 3;
                        }
                } else {
                        n += 3;
                }
        }
        return n;
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const HEX = '0123456789abcdef';
let b64Values;   // char code -> 6-bit value, -1 if not in either alphabet

// Node's lenient base64: both alphabets, other characters skipped, stops at '='.
function base64Decode(s) {
        if (!b64Values) {
                b64Values = new Int32ArrayC(128);
                for (let i = 0; i < 128; i++)
                        b64Values[i] = -1;
                for (let i = 0; i < 64; i++) {
                        b64Values[apply(charCodeAt, B64, [i])] = i;
                        b64Values[apply(charCodeAt, B64URL, [i])] = i;
                }
        }
        const ab = new ArrayBufferC(((s.length * 3) >> 2) + 3), out = new Uint8ArrayC(ab);
        let acc = 0, bits = 0, j = 0;
        for (let i = 0; i < s.length; i++) {
                const c = cc(s, i);
                if (c === 61)  // '='
                        break;
                const v = c < 128 ? b64Values[c] : -1;
                if (v < 0)
                        continue;
                acc = ((acc << 6) | v) & 0xffffff;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[j++] = (acc >> bits) & 255;
                }
        }
        return new Uint8ArrayC(ab, 0, j);
}
function base64Encode(b, url) {
        const A = url ? B64URL : B64;
        let s = '', i = 0;
        for (; i + 2 < b.length; i += 3) {
                const v = (b[i] << 16) | (b[i + 1] << 8) | b[i + 2];
                s += A[v >> 18] + A[(v >> 12) & 63] + A[(v >> 6) & 63] + A[v & 63];
        }
        if (i + 1 === b.length) {
                const v = b[i] << 16;
                s += A[v >> 18] + A[(v >> 12) & 63] + (url ? '' : '==');
        } else if (i + 2 === b.length) {
                const v = (b[i] << 16) | (b[i + 1] << 8);
                s += A[v >> 18] + A[(v >> 12) & 63] + A[(v >> 6) & 63] + (url ? '' : '=');
        }
        return s;
}
function hexValue(c) {
        if (c >= 48 && c <= 57)
                return c - 48;
        c |= 32;
        return c >= 97 && c <= 102 ? c - 87 : -1;
}
// Like Buffer.from(s, 'hex'): stops at the first pair that is not hex.
function hexDecode(s) {
        const ab = new ArrayBufferC(s.length >> 1), out = new Uint8ArrayC(ab);
        let j = 0;
        for (; j < out.length; j++) {
                const hi = hexValue(cc(s, 2 * j)), lo = hexValue(cc(s, 2 * j + 1));
                if (hi < 0 || lo < 0)
                        break;
                out[j] = (hi << 4) | lo;
        }
        return new Uint8ArrayC(ab, 0, j);
}
function hexEncode(b) {
        let s = '';
        for (let i = 0; i < b.length; i++)
                s += HEX[b[i] >> 4] + HEX[b[i] & 15];
        return s;
}
// Bytes as char codes, masked, or as UTF-16LE pairs.  Only ever given a
// digest, so one fromCharCode per character is fine.
function charsOf(b, mask, step) {
        let s = '';
        if (step === 1) {
                for (let i = 0; i < b.length; i++)
                        s += fromCharCode(b[i] & mask);
        } else {
                for (let i = 0; i + 1 < b.length; i += 2)
                        s += fromCharCode(b[i] | (b[i + 1] << 8));
        }
        return s;
}
let utf8Decoder;
function utf8Decode(b) {
        if (typeof tdDecode !== 'function')
                throw new TypeErrorC('TextDecoder is not available');
        utf8Decoder = utf8Decoder || new TextDecoderC();
        return apply(tdDecode, utf8Decoder, [b]);
}

// A string's bytes in a normalised encoding (utf8 when unknown, as Node).
function stringBytes(s, enc) {
        switch (enc) {
        case 'hex':
                return hexDecode(s);
        case 'base64':
        case 'base64url':
                return base64Decode(s);
        case 'latin1':
        case 'ascii': {
                const out = new Uint8ArrayC(s.length);
                for (let i = 0; i < s.length; i++)
                        out[i] = cc(s, i);
                return out;
        }
        case 'utf16le': {
                const out = new Uint8ArrayC(2 * s.length);
                for (let i = 0; i < s.length; i++) {
                        const c = cc(s, i);
                        out[2 * i] = c;
                        out[2 * i + 1] = c >> 8;
                }
                return out;
        }
        default: {
                const out = new Uint8ArrayC(utf8Length(s));
                utf8Write(s, 0, s.length, out);
                return out;
        }
        }
}
// Bytes in an output encoding; a Uint8Array for 'buffer' or an unknown
// encoding (Node returns a Buffer then).
function encodeBytes(b, enc) {
        switch (enc) {
        case 'hex':
                return hexEncode(b);
        case 'base64':
                return base64Encode(b, false);
        case 'base64url':
                return base64Encode(b, true);
        case 'latin1':
                return charsOf(b, 255, 1);
        case 'ascii':
                return charsOf(b, 127, 1);
        case 'utf16le':
                return charsOf(b, 0, 2);
        case 'utf8':
                return utf8Decode(b);
        default:
                return b;
        }
}

/* ------------------------------------------------------------- compression functions */

// Tables and scratch space, built on first use.
let K256, K512, KMD5, W, IV;

function int32s(list) {
        const t = new Int32ArrayC(list.length);
        for (let i = 0; i < list.length; i++)
                t[i] = list[i];
        return t;
}
function tables() {
        K256 = int32s([
                0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
                0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
                0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
                0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
                0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
                0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
                0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
                0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
        ]);
        // High and low halves, interleaved.
        K512 = int32s([
                0x428a2f98, 0xd728ae22, 0x71374491, 0x23ef65cd, 0xb5c0fbcf, 0xec4d3b2f, 0xe9b5dba5, 0x8189dbbc,
                0x3956c25b, 0xf348b538, 0x59f111f1, 0xb605d019, 0x923f82a4, 0xaf194f9b, 0xab1c5ed5, 0xda6d8118,
                0xd807aa98, 0xa3030242, 0x12835b01, 0x45706fbe, 0x243185be, 0x4ee4b28c, 0x550c7dc3, 0xd5ffb4e2,
                0x72be5d74, 0xf27b896f, 0x80deb1fe, 0x3b1696b1, 0x9bdc06a7, 0x25c71235, 0xc19bf174, 0xcf692694,
                0xe49b69c1, 0x9ef14ad2, 0xefbe4786, 0x384f25e3, 0x0fc19dc6, 0x8b8cd5b5, 0x240ca1cc, 0x77ac9c65,
                0x2de92c6f, 0x592b0275, 0x4a7484aa, 0x6ea6e483, 0x5cb0a9dc, 0xbd41fbd4, 0x76f988da, 0x831153b5,
                0x983e5152, 0xee66dfab, 0xa831c66d, 0x2db43210, 0xb00327c8, 0x98fb213f, 0xbf597fc7, 0xbeef0ee4,
                0xc6e00bf3, 0x3da88fc2, 0xd5a79147, 0x930aa725, 0x06ca6351, 0xe003826f, 0x14292967, 0x0a0e6e70,
                0x27b70a85, 0x46d22ffc, 0x2e1b2138, 0x5c26c926, 0x4d2c6dfc, 0x5ac42aed, 0x53380d13, 0x9d95b3df,
                0x650a7354, 0x8baf63de, 0x766a0abb, 0x3c77b2a8, 0x81c2c92e, 0x47edaee6, 0x92722c85, 0x1482353b,
                0xa2bfe8a1, 0x4cf10364, 0xa81a664b, 0xbc423001, 0xc24b8b70, 0xd0f89791, 0xc76c51a3, 0x0654be30,
                0xd192e819, 0xd6ef5218, 0xd6990624, 0x5565a910, 0xf40e3585, 0x5771202a, 0x106aa070, 0x32bbd1b8,
                0x19a4c116, 0xb8d2d0c8, 0x1e376c08, 0x5141ab53, 0x2748774c, 0xdf8eeb99, 0x34b0bcb5, 0xe19b48a8,
                0x391c0cb3, 0xc5c95a63, 0x4ed8aa4a, 0xe3418acb, 0x5b9cca4f, 0x7763e373, 0x682e6ff3, 0xd6b2b8a3,
                0x748f82ee, 0x5defb2fc, 0x78a5636f, 0x43172f60, 0x84c87814, 0xa1f0ab72, 0x8cc70208, 0x1a6439ec,
                0x90befffa, 0x23631e28, 0xa4506ceb, 0xde82bde9, 0xbef9a3f7, 0xb2c67915, 0xc67178f2, 0xe372532b,
                0xca273ece, 0xea26619c, 0xd186b8c7, 0x21c0c207, 0xeada7dd6, 0xcde0eb1e, 0xf57d4f7f, 0xee6ed178,
                0x06f067aa, 0x72176fba, 0x0a637dc5, 0xa2c898a6, 0x113f9804, 0xbef90dae, 0x1b710b35, 0x131c471b,
                0x28db77f5, 0x23047d84, 0x32caab7b, 0x40c72493, 0x3c9ebe0a, 0x15c9bebc, 0x431d67c4, 0x9c100d4c,
                0x4cc5d4be, 0xcb3e42b6, 0x597f299c, 0xfc657e2a, 0x5fcb6fab, 0x3ad6faec, 0x6c44198c, 0x4a475817,
        ]);
        KMD5 = int32s([
                0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
                0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
                0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
                0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
                0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
                0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
                0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
                0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
        ]);
        IV = {
                md5: int32s([0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476]),
                sha1: int32s([0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0]),
                sha224: int32s([0xc1059ed8, 0x367cd507, 0x3070dd17, 0xf70e5939, 0xffc00b31, 0x68581511, 0x64f98fa7, 0xbefa4fa4]),
                sha256: int32s([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]),
                sha384: int32s([
                        0xcbbb9d5d, 0xc1059ed8, 0x629a292a, 0x367cd507, 0x9159015a, 0x3070dd17, 0x152fecd8, 0xf70e5939,
                        0x67332667, 0xffc00b31, 0x8eb44a87, 0x68581511, 0xdb0c2e0d, 0x64f98fa7, 0x47b5481d, 0xbefa4fa4]),
                sha512: int32s([
                        0x6a09e667, 0xf3bcc908, 0xbb67ae85, 0x84caa73b, 0x3c6ef372, 0xfe94f82b, 0xa54ff53a, 0x5f1d36f1,
                        0x510e527f, 0xade682d1, 0x9b05688c, 0x2b3e6c1f, 0x1f83d9ab, 0xfb41bd6b, 0x5be0cd19, 0x137e2179]),
        };
        W = new Int32ArrayC(160);  // message schedule, shared: nothing here re-enters
}

// Each xBlock(H, p, off) runs the block of p at off through the state H
// (an Int32Array); xBlocks(H, p, off, n) runs n blocks.  One block per call
// rather than one loop over all blocks: JSC then tiers the block function
// up quickly instead of running a long first call in a slow tier (1 MiB of
// MD5 went from ~75 ms to ~12 ms cold).

function md5Block(H, p, off) {
        const M = W, K = KMD5;
        for (let i = 0; i < 16; i++) {
                const o = off + 4 * i;
                M[i] = p[o] | (p[o + 1] << 8) | (p[o + 2] << 16) | (p[o + 3] << 24);
        }
        let a = H[0], b = H[1], c = H[2], d = H[3];
        for (let i = 0; i < 16; i += 4) {
                const u1 = (a + ((b & c) | (~b & d)) + K[i] + M[i]) | 0;
                a = (b + ((u1 << 7) | (u1 >>> 25))) | 0;
                const u2 = (d + ((a & b) | (~a & c)) + K[i + 1] + M[i + 1]) | 0;
                d = (a + ((u2 << 12) | (u2 >>> 20))) | 0;
                const u3 = (c + ((d & a) | (~d & b)) + K[i + 2] + M[i + 2]) | 0;
                c = (d + ((u3 << 17) | (u3 >>> 15))) | 0;
                const u4 = (b + ((c & d) | (~c & a)) + K[i + 3] + M[i + 3]) | 0;
                b = (c + ((u4 << 22) | (u4 >>> 10))) | 0;
        }
        for (let i = 16; i < 32; i += 4) {
                const u1 = (a + ((b & d) | (c & ~d)) + K[i] + M[(5 * i + 1) & 15]) | 0;
                a = (b + ((u1 << 5) | (u1 >>> 27))) | 0;
                const u2 = (d + ((a & c) | (b & ~c)) + K[i + 1] + M[(5 * i + 6) & 15]) | 0;
                d = (a + ((u2 << 9) | (u2 >>> 23))) | 0;
                const u3 = (c + ((d & b) | (a & ~b)) + K[i + 2] + M[(5 * i + 11) & 15]) | 0;
                c = (d + ((u3 << 14) | (u3 >>> 18))) | 0;
                const u4 = (b + ((c & a) | (d & ~a)) + K[i + 3] + M[(5 * i + 16) & 15]) | 0;
                b = (c + ((u4 << 20) | (u4 >>> 12))) | 0;
        }
        for (let i = 32; i < 48; i += 4) {
                const u1 = (a + (b ^ c ^ d) + K[i] + M[(3 * i + 5) & 15]) | 0;
                a = (b + ((u1 << 4) | (u1 >>> 28))) | 0;
                const u2 = (d + (a ^ b ^ c) + K[i + 1] + M[(3 * i + 8) & 15]) | 0;
                d = (a + ((u2 << 11) | (u2 >>> 21))) | 0;
                const u3 = (c + (d ^ a ^ b) + K[i + 2] + M[(3 * i + 11) & 15]) | 0;
                c = (d + ((u3 << 16) | (u3 >>> 16))) | 0;
                const u4 = (b + (c ^ d ^ a) + K[i + 3] + M[(3 * i + 14) & 15]) | 0;
                b = (c + ((u4 << 23) | (u4 >>> 9))) | 0;
        }
        for (let i = 48; i < 64; i += 4) {
                const u1 = (a + (c ^ (b | ~d)) + K[i] + M[(7 * i) & 15]) | 0;
                a = (b + ((u1 << 6) | (u1 >>> 26))) | 0;
                const u2 = (d + (b ^ (a | ~c)) + K[i + 1] + M[(7 * i + 7) & 15]) | 0;
                d = (a + ((u2 << 10) | (u2 >>> 22))) | 0;
                const u3 = (c + (a ^ (d | ~b)) + K[i + 2] + M[(7 * i + 14) & 15]) | 0;
                c = (d + ((u3 << 15) | (u3 >>> 17))) | 0;
                const u4 = (b + (d ^ (c | ~a)) + K[i + 3] + M[(7 * i + 21) & 15]) | 0;
                b = (c + ((u4 << 21) | (u4 >>> 11))) | 0;
        }
        H[0] = (H[0] + a) | 0;
        H[1] = (H[1] + b) | 0;
        H[2] = (H[2] + c) | 0;
        H[3] = (H[3] + d) | 0;
}
function md5Blocks(H, p, off, n) {
        for (; n > 0; n--, off += 64)
                md5Block(H, p, off);
}

function sha1Block(H, p, off) {
        const w = W;
        for (let i = 0; i < 16; i++) {
                const o = off + 4 * i;
                w[i] = (p[o] << 24) | (p[o + 1] << 16) | (p[o + 2] << 8) | p[o + 3];
        }
        for (let i = 16; i < 80; i++) {
                const x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16];
                w[i] = (x << 1) | (x >>> 31);
        }
        let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4];
        for (let i = 0; i < 20; i++) {
                const t = (((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + e + 0x5a827999 + w[i]) | 0;
                e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = t;
        }
        for (let i = 20; i < 40; i++) {
                const t = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w[i]) | 0;
                e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = t;
        }
        for (let i = 40; i < 60; i++) {
                const t = (((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + e + 0x8f1bbcdc + w[i]) | 0;
                e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = t;
        }
        for (let i = 60; i < 80; i++) {
                const t = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0xca62c1d6 + w[i]) | 0;
                e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = t;
        }
        H[0] = (H[0] + a) | 0;
        H[1] = (H[1] + b) | 0;
        H[2] = (H[2] + c) | 0;
        H[3] = (H[3] + d) | 0;
        H[4] = (H[4] + e) | 0;
}
function sha1Blocks(H, p, off, n) {
        for (; n > 0; n--, off += 64)
                sha1Block(H, p, off);
}

// SHA-224 too (only the IV and the output length differ).
function sha256Block(H, p, off) {
        const w = W, K = K256;
        for (let i = 0; i < 16; i++) {
                const o = off + 4 * i;
                w[i] = (p[o] << 24) | (p[o + 1] << 16) | (p[o + 2] << 8) | p[o + 3];
        }
        for (let i = 16; i < 64; i++) {
                const x = w[i - 15], y = w[i - 2];
                const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
                const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
                w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
        }
        let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
        for (let i = 0; i < 64; i++) {
                const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
                const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
                const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
                const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
                h = g; g = f; f = e; e = (d + t1) | 0;
                d = c; c = b; b = a; a = (t1 + t2) | 0;
        }
        H[0] = (H[0] + a) | 0;
        H[1] = (H[1] + b) | 0;
        H[2] = (H[2] + c) | 0;
        H[3] = (H[3] + d) | 0;
        H[4] = (H[4] + e) | 0;
        H[5] = (H[5] + f) | 0;
        H[6] = (H[6] + g) | 0;
        H[7] = (H[7] + h) | 0;
}
function sha256Blocks(H, p, off, n) {
        for (; n > 0; n--, off += 64)
                sha256Block(H, p, off);
}

// SHA-384 too.  64-bit words are (high, low) pairs of int32.  A 64-bit sum
// adds the halves with int32 wrap-around and carries out of the low half
// with carry(x, y, x + y): everything stays in int32 arithmetic, which JSC
// compiles far better than doubles.  Rotations by n >= 32 swap halves.
function carry(x, y, s) {
        return ((x & y) | ((x | y) & ~s)) >>> 31;
}
function sha512Block(H, p, off) {
        const w = W, K = K512;
        for (let i = 0; i < 32; i++) {
                const o = off + 4 * i;
                w[i] = (p[o] << 24) | (p[o + 1] << 16) | (p[o + 2] << 8) | p[o + 3];
        }
        for (let i = 32; i < 160; i += 2) {
                let xh = w[i - 30], xl = w[i - 29];  // W[t-15]: sigma0 = rotr 1 ^ rotr 8 ^ shr 7
                const s0h = ((xh >>> 1) | (xl << 31)) ^ ((xh >>> 8) | (xl << 24)) ^ (xh >>> 7);
                const s0l = ((xl >>> 1) | (xh << 31)) ^ ((xl >>> 8) | (xh << 24)) ^ ((xl >>> 7) | (xh << 25));
                xh = w[i - 4];                       // W[t-2]: sigma1 = rotr 19 ^ rotr 61 ^ shr 6
                xl = w[i - 3];
                const s1h = ((xh >>> 19) | (xl << 13)) ^ ((xl >>> 29) | (xh << 3)) ^ (xh >>> 6);
                const s1l = ((xl >>> 19) | (xh << 13)) ^ ((xh >>> 29) | (xl << 3)) ^ ((xl >>> 6) | (xh << 26));
                // W[t] = sigma1 + W[t-7] + sigma0 + W[t-16]
                let yl = w[i - 13], l = (s1l + yl) | 0, h = (s1h + w[i - 14] + carry(s1l, yl, l)) | 0;
                let t = (l + s0l) | 0;
                h = (h + s0h + carry(l, s0l, t)) | 0;
                yl = w[i - 31];
                l = (t + yl) | 0;
                w[i] = (h + w[i - 32] + carry(t, yl, l)) | 0;
                w[i + 1] = l;
        }
        let ah = H[0], al = H[1], bh = H[2], bl = H[3], ch = H[4], cl = H[5], dh = H[6], dl = H[7];
        let eh = H[8], el = H[9], fh = H[10], fl = H[11], gh = H[12], gl = H[13], hh = H[14], hl = H[15];
        for (let i = 0; i < 160; i += 2) {
                // t1 = h + Sigma1(e) + Ch(e, f, g) + K[t] + W[t];  Sigma1 = rotr 14 ^ rotr 18 ^ rotr 41
                const S1h = ((eh >>> 14) | (el << 18)) ^ ((eh >>> 18) | (el << 14)) ^ ((el >>> 9) | (eh << 23));
                const S1l = ((el >>> 14) | (eh << 18)) ^ ((el >>> 18) | (eh << 14)) ^ ((eh >>> 9) | (el << 23));
                const chh = (eh & fh) ^ (~eh & gh), chl = (el & fl) ^ (~el & gl);
                let l = (hl + S1l) | 0, h = (hh + S1h + carry(hl, S1l, l)) | 0, t = (l + chl) | 0;
                h = (h + chh + carry(l, chl, t)) | 0;
                let y = K[i + 1];
                l = (t + y) | 0;
                h = (h + K[i] + carry(t, y, l)) | 0;
                y = w[i + 1];
                t = (l + y) | 0;
                const t1h = (h + w[i] + carry(l, y, t)) | 0, t1l = t;
                // t2 = Sigma0(a) + Maj(a, b, c);  Sigma0 = rotr 28 ^ rotr 34 ^ rotr 39
                const S0h = ((ah >>> 28) | (al << 4)) ^ ((al >>> 2) | (ah << 30)) ^ ((al >>> 7) | (ah << 25));
                const S0l = ((al >>> 28) | (ah << 4)) ^ ((ah >>> 2) | (al << 30)) ^ ((ah >>> 7) | (al << 25));
                const mjh = (ah & bh) ^ (ah & ch) ^ (bh & ch), mjl = (al & bl) ^ (al & cl) ^ (bl & cl);
                hh = gh; hl = gl; gh = fh; gl = fl; fh = eh; fl = el;
                el = (dl + t1l) | 0;
                eh = (dh + t1h + carry(dl, t1l, el)) | 0;
                dh = ch; dl = cl; ch = bh; cl = bl; bh = ah; bl = al;
                l = (t1l + S0l) | 0;
                h = (t1h + S0h + carry(t1l, S0l, l)) | 0;
                al = (l + mjl) | 0;
                ah = (h + mjh + carry(l, mjl, al)) | 0;
        }
        add64(H, 0, ah, al);
        add64(H, 2, bh, bl);
        add64(H, 4, ch, cl);
        add64(H, 6, dh, dl);
        add64(H, 8, eh, el);
        add64(H, 10, fh, fl);
        add64(H, 12, gh, gl);
        add64(H, 14, hh, hl);
}
function sha512Blocks(H, p, off, n) {
        for (; n > 0; n--, off += 128)
                sha512Block(H, p, off);
}
function add64(H, i, xh, xl) {
        const yl = H[i + 1], l = (xl + yl) | 0;
        H[i] = (H[i] + xh + carry(xl, yl, l)) | 0;
        H[i + 1] = l;
}

/* ------------------------------------------------------------- digest state */

// name: the algorithm, as createHash takes it; block: bytes per block;
// size: digest bytes; le: little-endian words (MD5).
const ALGORITHMS = {
        md5: { name: 'md5', block: 64, size: 16, le: true, compress: md5Blocks },
        sha1: { name: 'sha1', block: 64, size: 20, le: false, compress: sha1Blocks },
        sha224: { name: 'sha224', block: 64, size: 28, le: false, compress: sha256Blocks },
        sha256: { name: 'sha256', block: 64, size: 32, le: false, compress: sha256Blocks },
        sha384: { name: 'sha384', block: 128, size: 48, le: false, compress: sha512Blocks },
        sha512: { name: 'sha512', block: 128, size: 64, le: false, compress: sha512Blocks },
};
// Node also takes the WebCrypto spellings ("SHA-256") and OpenSSL's "RSA-SHA256".
const ALIASES = { 'sha-1': 'sha1', 'sha-224': 'sha224', 'sha-256': 'sha256', 'sha-384': 'sha384',
                  'sha-512': 'sha512', 'rsa-md5': 'md5', 'rsa-sha1': 'sha1', 'rsa-sha224': 'sha224',
                  'rsa-sha256': 'sha256', 'rsa-sha384': 'sha384', 'rsa-sha512': 'sha512' };
function lookup(name) {
        let n = apply(toLowerCase, name, []);
        if (hasOwnCall(ALIASES, n))
                n = ALIASES[n];
        return hasOwnCall(ALGORITHMS, n) ? ALGORITHMS[n] : undefined;
}

// A running digest: state words, the pending partial block, total length.
class Core {
        constructor(alg, from) {
                if (!K256)
                        tables();
                this.alg = alg;
                this.h = new Int32ArrayC(IV[alg.name].length);
                this.buf = new Uint8ArrayC(alg.block);
                this.pos = 0;
                this.len = 0;
                const src = from ? from.h : IV[alg.name];
                for (let i = 0; i < src.length; i++)
                        this.h[i] = src[i];
                if (from) {
                        for (let i = 0; i < from.pos; i++)
                                this.buf[i] = from.buf[i];
                        this.pos = from.pos;
                        this.len = from.len;
                }
        }
        update(p, off, n) {
                const B = this.alg.block, buf = this.buf;
                this.len += n;
                if (this.pos > 0) {
                        let pos = this.pos;
                        const take = B - pos < n ? B - pos : n;
                        for (let i = 0; i < take; i++)
                                buf[pos++] = p[off + i];
                        off += take;
                        n -= take;
                        if (pos < B) {
                                this.pos = pos;
                                return;
                        }
                        this.alg.compress(this.h, buf, 0, 1);
                        this.pos = 0;
                }
                const blocks = floor(n / B);
                if (blocks > 0) {
                        this.alg.compress(this.h, p, off, blocks);
                        off += blocks * B;
                        n -= blocks * B;
                }
                for (let i = 0; i < n; i++)
                        buf[i] = p[off + i];
                this.pos = n;
        }
        updateString(s) {
                checkCharCodeAt();
                if (!scratch)
                        scratch = new Uint8ArrayC(3 * STRING_CHUNK + 3);
                for (let i = 0; i < s.length;) {
                        let end = i + STRING_CHUNK < s.length ? i + STRING_CHUNK : s.length;
                        const last = cc(s, end - 1);
                        if (end < s.length && last >= 0xd800 && last < 0xdc00)
                                end++;  // keep a surrogate pair together
                        this.update(scratch, 0, utf8Write(s, i, end, scratch));
                        i = end;
                }
        }
        // Pads, compresses and returns the digest; the state is spent after.
        finish() {
                const alg = this.alg, B = alg.block, buf = this.buf;
                let pos = this.pos;
                buf[pos++] = 0x80;
                if (pos > B - (B >> 3)) {  // no room for the 8- or 16-byte length
                        while (pos < B)
                                buf[pos++] = 0;
                        alg.compress(this.h, buf, 0, 1);
                        pos = 0;
                }
                while (pos < B - 8)
                        buf[pos++] = 0;
                // Bit length: len < 2^53, so it fits in the last 8 bytes.
                const hi = floor(this.len / 0x20000000), lo = (this.len % 0x20000000) * 8;
                if (alg.le) {
                        putWord(buf, B - 8, lo, true);
                        putWord(buf, B - 4, hi, true);
                } else {
                        putWord(buf, B - 8, hi, false);
                        putWord(buf, B - 4, lo, false);
                }
                alg.compress(this.h, buf, 0, 1);
                const out = new Uint8ArrayC(alg.size);
                for (let i = 0; i < alg.size; i += 4)
                        putWord(out, i, this.h[i >> 2], alg.le);
                return out;
        }
}
function putWord(b, o, v, le) {
        if (le) {
                b[o] = v;
                b[o + 1] = v >>> 8;
                b[o + 2] = v >>> 16;
                b[o + 3] = v >>> 24;
        } else {
                b[o] = v >>> 24;
                b[o + 1] = v >>> 16;
                b[o + 2] = v >>> 8;
                b[o + 3] = v;
        }
}
const STRING_CHUNK = 8192;
let scratch;  // UTF-8 of one string chunk

// update() for Hash and Hmac: a string in an encoding, or bytes.
function feed(core, data, encoding) {
        if (typeof data === 'string') {
                const enc = encoding ? normEncoding(encoding) : 'utf8';
                if (enc === 'hex' && (data.length & 1))
                        throw nodeError(TypeErrorC, 'ERR_INVALID_ARG_VALUE', "The argument 'encoding' is invalid for data of length " +
                                        data.length + ". Received '" + StringC(encoding) + "'");
                if (enc === undefined || enc === 'utf8') {
                        core.updateString(data);
                } else {
                        checkCharCodeAt();
                        const b = stringBytes(data, enc);
                        core.update(b, 0, b.length);
                }
                return;
        }
        const b = bytesOf(data, true);
        if (!b)
                throw argType('data', 'of type string or an instance of Buffer, TypedArray, or DataView', data);
        core.update(b, 0, b.length);
}
// digest() output: a string for a truthy encoding Node knows, else bytes.
function output(bytes, encoding) {
        if (!encoding)
                return bytes;
        return encodeBytes(bytes, normEncoding(encoding));
}
function hashAlgorithm(algorithm) {
        if (typeof algorithm !== 'string')
                throw argType('algorithm', 'of type string', algorithm);
        const alg = lookup(algorithm);
        if (!alg)
                throw new ErrorC('Digest method not supported');
        return alg;
}

class Hash {
        #core;
        #done = false;
        constructor(algorithm) {
                this.#core = new Core(hashAlgorithm(algorithm));
        }
        update(data, inputEncoding) {
                if (this.#done)
                        throw finalized();
                feed(this.#core, data, inputEncoding);
                return this;
        }
        digest(outputEncoding) {
                if (this.#done)
                        throw finalized();
                this.#done = true;
                const out = this.#core.finish();
                this.#core = null;
                return output(out, outputEncoding);
        }
        copy() {
                if (this.#done)
                        throw finalized();
                const h = new Hash(this.#core.alg.name);
                h.#core = new Core(this.#core.alg, this.#core);
                return h;
        }
}

class Hmac {
        #inner;
        #outer;
        #done = false;
        constructor(hmac, key, options) {
                if (typeof hmac !== 'string')
                        throw argType('hmac', 'of type string', hmac);
                let k;
                if (typeof key === 'string') {
                        checkCharCodeAt();
                        const enc = options && options.encoding ? normEncoding(options.encoding) : 'utf8';
                        k = stringBytes(key, enc);
                } else {
                        k = bytesOf(key, true);
                        if (!k)
                                throw argType('key', 'of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey', key);
                }
                const alg = lookup(hmac);
                if (!alg)
                        throw nodeError(TypeErrorC, 'ERR_CRYPTO_INVALID_DIGEST', 'Invalid digest: ' + hmac);
                if (k.length > alg.block) {
                        const c = new Core(alg);
                        c.update(k, 0, k.length);
                        k = c.finish();
                }
                const pad = new Uint8ArrayC(alg.block);
                for (let i = 0; i < k.length; i++)
                        pad[i] = k[i] ^ 0x36;
                for (let i = k.length; i < alg.block; i++)
                        pad[i] = 0x36;
                this.#inner = new Core(alg);
                this.#inner.update(pad, 0, pad.length);
                for (let i = 0; i < alg.block; i++)
                        pad[i] ^= 0x36 ^ 0x5c;
                this.#outer = new Core(alg);
                this.#outer.update(pad, 0, pad.length);
        }
        update(data, inputEncoding) {
                if (this.#done)
                        throw finalized();
                feed(this.#inner, data, inputEncoding);
                return this;
        }
        // Node returns an empty result from a second digest() instead of throwing.
        digest(outputEncoding) {
                if (this.#done)
                        return outputEncoding === 'buffer' ? new Uint8ArrayC(0) : '';
                this.#done = true;
                const ih = this.#inner.finish();
                this.#outer.update(ih, 0, ih.length);
                const out = this.#outer.finish();
                this.#inner = this.#outer = null;
                return output(out, outputEncoding);
        }
}

function createHash(algorithm, options) {
        return new Hash(algorithm, options);
}
function createHmac(hmac, key, options) {
        return new Hmac(hmac, key, options);
}
// Node 21.7's one-shot crypto.hash(algorithm, data[, outputEncoding='hex']).
function hash(algorithm, data, outputEncoding) {
        if (typeof algorithm !== 'string')
                throw argType('algorithm', 'of type string', algorithm);
        if (typeof data !== 'string' && !isView(data))
                throw argType('input', 'of type string or an instance of Buffer, TypedArray, or DataView', data);
        let enc = 'hex';
        if (outputEncoding !== undefined && outputEncoding !== 'hex') {
                if (typeof outputEncoding !== 'string')
                        throw argType('outputEncoding', 'of type string', outputEncoding);
                enc = normEncoding(outputEncoding);
                if (enc === undefined && apply(toLowerCase, outputEncoding, []) === 'buffer')
                        enc = 'buffer';
                if (enc === undefined)
                        throw nodeError(TypeErrorC, 'ERR_INVALID_ARG_VALUE', "The argument 'outputEncoding' is invalid. Received '" + outputEncoding + "'");
        }
        const alg = lookup(algorithm);
        if (!alg)
                throw new ErrorC('Digest method ' + algorithm + ' is not supported');
        const core = new Core(alg);
        feed(core, data);
        return encodeBytes(core.finish(), enc);
}
function getHashes() {
        return ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512'];
}

function timingSafeEqual(buf1, buf2) {
        const a = bytesOf(buf1, true);
        if (!a)
                throw nodeError(TypeErrorC, 'ERR_INVALID_ARG_TYPE', 'The "buf1" argument must be an instance of ArrayBuffer, Buffer, TypedArray, or DataView.');
        const b = bytesOf(buf2, true);
        if (!b)
                throw nodeError(TypeErrorC, 'ERR_INVALID_ARG_TYPE', 'The "buf2" argument must be an instance of ArrayBuffer, Buffer, TypedArray, or DataView.');
        if (a.length !== b.length)
                throw nodeError(RangeErrorC, 'ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH', 'Input buffers must have the same byte length');
        let d = 0;
        for (let i = 0; i < a.length; i++)
                d |= a[i] ^ b[i];
        return d === 0;
}

/* ------------------------------------------------------------- subtle.digest */

const SUBTLE_DIGESTS = { 'sha-1': 'sha1', 'sha-256': 'sha256', 'sha-384': 'sha384', 'sha-512': 'sha512' };

// Resolves to an ArrayBuffer.  Computed now (the bytes are read when
// called, as the spec's copy would be); every error is a rejection.
function subtleDigest(algorithm, data) {
        try {
                if (arguments.length < 2)
                        throw nodeError(TypeErrorC, 'ERR_MISSING_ARGS', "Failed to execute 'digest' on 'SubtleCrypto': 2 arguments required, but only " +
                                        arguments.length + ' present.');
                let name = algorithm;
                if (algorithm !== null && (typeof algorithm === 'object' || typeof algorithm === 'function')) {
                        name = algorithm.name;
                        if (name === undefined)
                                throw new TypeErrorC("Failed to normalize algorithm: 'name' is required in 'Algorithm'.");
                }
                name = apply(toLowerCase, StringC(name), []);
                if (!hasOwnCall(SUBTLE_DIGESTS, name))
                        throw domException('Unrecognized algorithm name', 'NotSupportedError');
                const b = bytesOf(data, true);
                if (!b)
                        throw nodeError(TypeErrorC, 'ERR_INVALID_ARG_TYPE', "Failed to execute 'digest' on 'SubtleCrypto': 2nd argument is not instance of ArrayBuffer, Buffer, TypedArray, or DataView.");
                const core = new Core(ALGORITHMS[SUBTLE_DIGESTS[name]]);
                core.update(b, 0, b.length);
                return apply(promiseResolve, PromiseC, [apply(taBufferGet, core.finish(), [])]);
        } catch (e) {
                return apply(promiseReject, PromiseC, [e]);
        }
}

/* ------------------------------------------------------------- randomness */

const MAX_RANDOM_CHUNK = 65536;   // what host.getRandomValues takes at once
const MAX_SIZE = 2147483647;      // Node's kMaxLength for randomBytes
const RAND_MAX = 0xffffffffffff;  // randomInt draws 48-bit values, as Node
const TWO32 = 4294967296;
const RANDOM_CACHE = 6 * 128;     // bytes randomInt fetches at a time
const INTEGER_ARRAYS = {
        Int8Array: 1, Uint8Array: 1, Uint8ClampedArray: 1, Int16Array: 1, Uint16Array: 1,
        Int32Array: 1, Uint32Array: 1, BigInt64Array: 1, BigUint64Array: 1,
};
const ELEMENT_SIZES = {
        Int8Array: 1, Uint8Array: 1, Uint8ClampedArray: 1, Int16Array: 2, Uint16Array: 2, Float16Array: 2,
        Int32Array: 4, Uint32Array: 4, Float32Array: 4, Float64Array: 8, BigInt64Array: 8, BigUint64Array: 8,
};

function later(fn) {
        if (typeof queueMicrotaskF === 'function')
                queueMicrotaskF(fn);
        else
                apply(promiseThen, apply(promiseResolve, PromiseC, []), [fn]);
}
function checkCallback(cb) {
        if (typeof cb !== 'function')
                throw argType('callback', 'of type function', cb);
}
function checkSize(size, name, elementSize, max) {
        if (typeof size !== 'number')
                throw argType(name, 'of type number', size);
        size *= elementSize;
        if (size !== size || size > max || size < 0)
                throw outOfRange(name, '>= 0 && <= ' + max, size);
        return floor(size);
}

function install(host) {
        const hostGetRandomValues = host.getRandomValues;
        const hostRandomUUID = host.randomUUID;

        // Fills bytes [off, off + n) of buffer ab from the parent.
        function fill(ab, off, n) {
                for (let done = 0; done < n; done += MAX_RANDOM_CHUNK) {
                        const len = n - done < MAX_RANDOM_CHUNK ? n - done : MAX_RANDOM_CHUNK;
                        apply(hostGetRandomValues, host, [new Uint8ArrayC(ab, off + done, len)]);
                }
        }
        function randomBytes(size, callback) {
                size = checkSize(size, 'size', 1, MAX_SIZE);
                if (callback !== undefined)
                        checkCallback(callback);
                const ab = new ArrayBufferC(size);
                fill(ab, 0, size);
                const out = new Uint8ArrayC(ab);
                if (callback === undefined)
                        return out;
                later(function () { callback(null, out); });
                return undefined;
        }
        // randomFillSync(buf[, offset[, size]]): offset and size count elements.
        function randomFillSync(buf, offset, size) {
                const b = bytesOf(buf, true);
                if (!b)
                        throw argType('buf', 'an instance of ArrayBuffer or ArrayBufferView', buf);
                const tag = isView(buf) ? apply(taTagGet, buf, []) : undefined;
                const el = tag === undefined ? 1 : ELEMENT_SIZES[tag];
                const max = b.length < MAX_SIZE ? b.length : MAX_SIZE;
                const off = checkSize(offset === undefined ? 0 : offset, 'offset', el, max);
                let n;
                if (size === undefined) {
                        n = b.length - off;
                } else {
                        n = checkSize(size, 'size', el, MAX_SIZE);
                        if (n + off > b.length)
                                throw outOfRange('size + offset', '<= ' + b.length, n + off);
                }
                fill(apply(taBufferGet, b, []), apply(taByteOffsetGet, b, []) + off, n);
                return buf;
        }
        function randomFill(buf, offset, size, callback) {
                if (typeof offset === 'function') {
                        callback = offset;
                        offset = size = undefined;
                } else if (typeof size === 'function') {
                        callback = size;
                        size = undefined;
                }
                checkCallback(callback);
                randomFillSync(buf, offset, size);
                later(function () { callback(null, buf); });
        }

        let cache = null, cacheBuffer = null, cachePos = RANDOM_CACHE;
        function random48() {
                if (cachePos === RANDOM_CACHE) {
                        if (!cache) {
                                cacheBuffer = new ArrayBufferC(RANDOM_CACHE);
                                cache = new Uint8ArrayC(cacheBuffer);
                        }
                        fill(cacheBuffer, 0, RANDOM_CACHE);
                        cachePos = 0;
                }
                const b = cache, o = cachePos;
                cachePos += 6;
                return ((b[o] << 8) | b[o + 1]) * TWO32 + (((b[o + 2] << 24) | (b[o + 3] << 16) | (b[o + 4] << 8) | b[o + 5]) >>> 0);
        }
        // randomInt([min,] max[, callback]): uniform in [min, max), by
        // rejection sampling of 48-bit draws (max - min < 2^48).
        function randomInt(min, max, callback) {
                const minOmitted = max === undefined || typeof max === 'function';
                if (minOmitted) {
                        callback = max;
                        max = min;
                        min = 0;
                }
                if (callback !== undefined)
                        checkCallback(callback);
                if (!isSafeInteger(min))
                        throw argType('min', 'a safe integer', min);
                if (!isSafeInteger(max))
                        throw argType('max', 'a safe integer', max);
                if (max <= min)
                        throw outOfRange('max', 'greater than the value of "min" (' + min + ')', max);
                const range = max - min;
                if (!(range <= RAND_MAX))
                        throw outOfRange(minOmitted ? 'max' : 'max - min', '<= ' + RAND_MAX, range);
                const limit = RAND_MAX - (RAND_MAX % range);
                let x;
                do
                        x = random48();
                while (x >= limit);
                const n = (x % range) + min;
                if (callback === undefined)
                        return n;
                later(function () { callback(null, n); });
                return undefined;
        }
        function getRandomValues(data) {
                const tag = isView(data) ? apply(taTagGet, data, []) : undefined;
                if (tag === undefined || !hasOwnCall(INTEGER_ARRAYS, tag))
                        throw domException('The data argument must be an integer-type TypedArray', 'TypeMismatchError');
                const b = bytesOf(data, false);
                if (b.length > MAX_RANDOM_CHUNK)
                        throw domException('The requested length exceeds 65,536 bytes', 'QuotaExceededError');
                if (b.length > 0)
                        apply(hostGetRandomValues, host, [b]);
                return data;
        }
        function randomUUID(options) {
                if (options !== undefined && (options === null || typeof options !== 'object'))
                        throw argType('options', 'of type object', options);
                return StringC(apply(hostRandomUUID, host, []));
        }

        const subtle = {};
        defineProperty(subtle, 'digest', { value: subtleDigest, writable: true, enumerable: true, configurable: true });
        defineProperty(subtle, toStringTag, { value: 'SubtleCrypto', configurable: true });
        const webcrypto = { getRandomValues, randomUUID, subtle };
        defineProperty(webcrypto, toStringTag, { value: 'Crypto', configurable: true });
        const module = {
                createHash, createHmac, hash, getHashes,
                randomBytes, randomFill, randomFillSync, randomInt, randomUUID, getRandomValues,
                timingSafeEqual, webcrypto, subtle,
        };
        return { module, subtle };
}

defineProperty(G, '__chidoriInstallCrypto', { value: install, writable: true, enumerable: false, configurable: true });
}
