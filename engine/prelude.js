/* engine/prelude.js - the agent-facing surface of the engine worker.
 *
 * Evaluated once per run, before any agent code (web.js on first use).  The
 * engine installs the natives as a hidden (non-enumerable) global,
 * __chidoriNative; the first statement below captures it and deletes it, so
 * agent code cannot reach the raw transport.  Everything else lives in one
 * strict block, so nothing here becomes a global by accident.  The script's
 * completion value (its last expression statement) is the object of hooks
 * the engine drives the run with.
 *
 * Natives (engine/natives.c):
 *   call(op, argsJson) -> id          send a call frame; its result comes
 *                                     back through deliver()
 *   callSync(op, argsJson) -> frame   send a call frame and wait for its
 *                                     result frame {ok, value|error}
 *   finish(doneJson[, stop])          the agent settled: the done frame;
 *                                     stop (process.exit) also ends the JS
 * Hooks (engine/engine.c):
 *   start(wrapper, input, runId, filename, prefixLen, esm, env, virtualTime)
 *   deliver(id, frame)   settle the promise of call `id`
 *   fireTimer(busy) -> bool  fire the earliest virtual timer, false if none;
 *                        busy (calls outstanding): only one due now (a
 *                        setImmediate), the clock does not move.  In real
 *                        time only setImmediate's are here: timers are calls
 *   fail(error)          end the run with an error
 *
 * Determinism: every call is sent synchronously, when the agent makes it, so
 * ids follow program order.  Time comes from the sync clock.now op (plus,
 * under --virtual-time, the virtual time timers have advanced); randomness
 * from random.seed and random.bytes.  In real time (the default) a timer is
 * a timer.wait call the parent answers when it is due, and clearTimeout is a
 * call.cancel of it; nothing here waits itself.
 */
'use strict';
{
const native = globalThis.__chidoriNative;
delete globalThis.__chidoriNative;

const G = globalThis;
const nativeCall = native.call;
const nativeCallSync = native.callSync;
const nativeFinish = native.finish;
const nativeLoad = native.load;
// timersQueued[0] tells the engine's loop the timer heap is not empty (it
// enters JS to run a due setImmediate only then).
const timersQueued = native.timers || [0];

/* Intrinsics, captured before agent code can replace them. */
const O = Object;
const defineProperty = O.defineProperty;
const getOwnPropertyDescriptor = O.getOwnPropertyDescriptor;
const getPrototypeOf = O.getPrototypeOf;
const create = O.create;
const freeze = O.freeze;
const is = O.is;
const ownKeys = Reflect.ownKeys;
const apply = Reflect.apply;
const construct = Reflect.construct;
const stringify = JSON.stringify;
const PromiseC = Promise;
const promiseThen = Promise.prototype.then;
const promiseResolve = Promise.resolve;
const promiseReject = Promise.reject;
const ErrorC = Error;
const TypeErrorC = TypeError;
const RangeErrorC = RangeError;
const StringC = String;
const NumberC = Number;
const isArray = Array.isArray;
const imul = Math.imul;
const floor = Math.floor;
const objToString = O.prototype.toString;
const hasOwn = O.prototype.hasOwnProperty;
const FunctionProto = Function.prototype;
const fnToString = Function.prototype.toString;
const symToString = Symbol.prototype.toString;
const RealDate = Date;
const dateGetTime = Date.prototype.getTime;
const dateToISOString = Date.prototype.toISOString;
const regexpToString = RegExp.prototype.toString;
const regexpSourceGet = getOwnPropertyDescriptor(RegExp.prototype, 'source').get;
const mapSizeGet = getOwnPropertyDescriptor(Map.prototype, 'size').get;
const mapForEach = Map.prototype.forEach;
const setSizeGet = getOwnPropertyDescriptor(Set.prototype, 'size').get;
const setForEach = Set.prototype.forEach;
const abByteLengthGet = getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
const TypedArrayProto = getPrototypeOf(Uint8Array.prototype);
const taTagGet = getOwnPropertyDescriptor(TypedArrayProto, Symbol.toStringTag).get;
const taLengthGet = getOwnPropertyDescriptor(TypedArrayProto, 'length').get;
const taBufferGet = getOwnPropertyDescriptor(TypedArrayProto, 'buffer').get;
const taByteOffsetGet = getOwnPropertyDescriptor(TypedArrayProto, 'byteOffset').get;
const taByteLengthGet = getOwnPropertyDescriptor(TypedArrayProto, 'byteLength').get;
const Uint8ArrayC = Uint8Array;
const u8Set = TypedArrayProto.set;

function define(obj, name, value) {
        defineProperty(obj, name, { value, writable: true, enumerable: false, configurable: true });
}
function brand(getter, v) {
        try {
                apply(getter, v, []);
                return true;
        } catch (e) {
                return false;
        }
}
function safeString(v) {
        try {
                return StringC(v);
        } catch (e) {
                return apply(objToString, v, []);
        }
}

/* ------------------------------------------------------------ host calls */

const pending = create(null);  // id -> {resolve, reject}

// Asynchronous call: the frame is sent now; the promise settles when the
// engine's loop delivers the result.
function hostCall(op, args) {
        let resolve, reject;
        const p = new PromiseC((res, rej) => {
                resolve = res;
                reject = rej;
        });
        let id;
        try {
                id = nativeCall(op, stringify(args));
        } catch (e) {
                reject(e);
                return p;
        }
        pending[id] = { resolve, reject };
        return p;
}

// Fire-and-forget: the result is read and dropped by the loop.
function hostSend(op, args) {
        nativeCall(op, stringify(args));
}

function hostCallSync(op, args) {
        const f = nativeCallSync(op, stringify(args));
        if (f.ok)
                return f.value === undefined ? null : f.value;
        throw hostError(f.error);
}

const ERROR_CTORS = { TypeError, RangeError, SyntaxError, ReferenceError, URIError, EvalError };

// Turn a result's {name, message} into an Error the agent can catch.
function hostError(e) {
        let name = 'Error', message = 'host call failed';
        if (e !== null && typeof e === 'object') {
                if (typeof e.name === 'string' && e.name)
                        name = e.name;
                if (typeof e.message === 'string')
                        message = e.message;
        } else if (typeof e === 'string') {
                message = e;
        }
        const C = apply(hasOwn, ERROR_CTORS, [name]) ? ERROR_CTORS[name] : ErrorC;
        const err = new C(message);
        if (C === ErrorC && name !== 'Error')
                define(err, 'name', name);
        if (e !== null && typeof e === 'object' && e.code !== undefined)
                define(err, 'code', e.code);
        return err;
}

function deliver(id, frame) {
        const p = pending[id];
        if (p === undefined)
                return;  // fire-and-forget (console.*)
        delete pending[id];
        if (frame.ok)
                p.resolve(frame.value === undefined ? null : frame.value);
        else
                p.reject(hostError(frame.error));
}

function rejected(err) {
        return apply(promiseReject, PromiseC, [err]);
}
function unavailable(name) {
        const f = function () {
                return rejected(new ErrorC(name + ' is not available yet in this version of chidori'));
        };
        defineProperty(f, 'name', { value: name.slice(name.lastIndexOf('.') + 1) });
        return f;
}
function needString(what, v) {
        if (typeof v !== 'string')
                throw new TypeErrorC(what + ' must be a string, got ' + (v === null ? 'null' : typeof v));
}
function plainOptions(what, o) {
        if (o === undefined || o === null)
                return {};
        if (typeof o !== 'object' || isArray(o))
                throw new TypeErrorC(what + ' must be an object');
        return o;
}
// A path for the parent: a string without NUL (JSON would carry it, the
// parent's C strings would cut the path there).
function needPath(what, v) {
        needString(what, v);
        if (v.indexOf('\0') !== -1)
                throw new TypeErrorC(what + ' must not contain NUL characters');
}

/* web.js (DOMException, TextEncoder/Decoder, atob/btoa, URL,
 * URLSearchParams, structuredClone, queueMicrotask) is evaluated on first
 * touch of one of its globals, not at every start: until then each is an
 * accessor (lazyWebGlobal below).  web() evaluates it once and returns what it
 * defined, whatever agent code did to the globals meanwhile. */
const WEB_GLOBALS = ['DOMException', 'TextEncoder', 'TextDecoder', 'atob', 'btoa', 'URL', 'URLSearchParams',
                     'structuredClone', 'queueMicrotask'];
const webGetters = create(null);  // name -> our accessor's getter, while it is in place
let webValues = null;
function web() {
        if (webValues)
                return webValues;
        const values = create(null);
        // Our accessors go first (web.js installs where a global is absent);
        // what agent code did to one meanwhile (assigned, redefined,
        // deleted) is put back after.
        const kept = create(null);
        for (let i = 0; i < WEB_GLOBALS.length; i++) {
                const n = WEB_GLOBALS[i];
                if (webGetters[n] === undefined)
                        continue;  // the engine had its own (JSC's): never ours
                const d = getOwnPropertyDescriptor(G, n);
                if (d && d.get !== undefined && d.get === webGetters[n])
                        delete G[n];
                else
                        kept[n] = { d };
        }
        define(G, '__chidoriWebExports', values);
        try {
                nativeLoad('web');
        } finally {
                delete G.__chidoriWebExports;
                for (const n in kept) {
                        if (kept[n].d === undefined)
                                delete G[n];
                        else
                                defineProperty(G, n, kept[n].d);
                }
        }
        if (typeof values.URL !== 'function')
                throw new ErrorC('chidori: the web module did not load');
        webValues = values;
        for (let i = 0; i < WEB_GLOBALS.length; i++)
                if (typeof values[WEB_GLOBALS[i]] === 'function' && WEB_GLOBALS[i][0] >= 'A' && WEB_GLOBALS[i][0] <= 'Z')
                        GLOBAL_CTORS[WEB_GLOBALS[i]] = values[WEB_GLOBALS[i]];
        return values;
}

/* Bytes <-> text and base64 for effects that carry bytes (the frames are
 * JSON), with web.js's classes (agent code may replace the globals). */
let utf8enc, utf8dec;
function utf8Encode(str) {
        if (!utf8enc)
                utf8enc = new (web().TextEncoder)();
        return utf8enc.encode(str);
}
function utf8Decode(bytes) {
        if (!utf8dec)
                utf8dec = new (web().TextDecoder)('utf-8');
        return utf8dec.decode(bytes);
}
function toBytes(what, data) {
        if (typeof data === 'string')
                return utf8Encode(data);
        if (data instanceof ArrayBuffer)
                return new Uint8ArrayC(data);
        if (ArrayBuffer.isView(data))
                return new Uint8ArrayC(data.buffer, data.byteOffset, data.byteLength);
        throw new TypeErrorC(what + ' must be a string, an ArrayBuffer or a typed array, got ' +
                             (data === null ? 'null' : typeof data));
}
function readEncoding(options) {
        let enc = options;
        if (options !== null && typeof options === 'object')
                enc = options.encoding;
        if (enc === undefined || enc === 'utf8' || enc === 'utf-8')
                return 'utf8';
        if (enc === null || enc === 'bytes')
                return 'bytes';
        throw new TypeErrorC("encoding must be 'utf8' or 'bytes' (null), got " + safeString(enc));
}
function base64Encode(bytes) {
        const n = bytes.length;
        let out = '', chunk = '';
        for (let i = 0; i < n; i += 3) {
                const a = bytes[i], b = i + 1 < n ? bytes[i + 1] : 0, c = i + 2 < n ? bytes[i + 2] : 0;
                const v = (a << 16) | (b << 8) | c;
                chunk += B64[v >> 18] + B64[(v >> 12) & 63] + (i + 1 < n ? B64[(v >> 6) & 63] : '=') +
                         (i + 2 < n ? B64[v & 63] : '=');
                if (chunk.length >= 8192) {
                        out += chunk;
                        chunk = '';
                }
        }
        return out + chunk;
}

/* ------------------------------------------------------ formatting (util.format) */

// web.js's classes, by name, as web.js defined them (filled when it loads):
// format.js shows an instance of one by its accessors (isWebClass).  JSC's
// own constructors are not listed: they are native, which isWebClass rules
// out anyway, and reading each global's descriptor here made JSC build
// every lazily created one (Intl, WebAssembly...) in every run: ~0.8 ms.
const GLOBAL_CTORS = create(null);
/* util.format, inspect and formatError are engine/format.js, evaluated the
 * first time a value is formatted (console.*, an error that is not an Error,
 * a warning): a run that formats nothing never parses it.  It is handed the
 * intrinsics captured above, before agent code ran, as its `this`. */
let formatModule;
function fmt() {
        if (!formatModule) {
                const m = nativeLoad('format', {
                        ErrorC, FunctionProto, G, NumberC, O, RangeErrorC, StringC, abByteLengthGet, apply,
                        brand, create, dateGetTime, dateToISOString, fixStack, fnToString,
                        getOwnPropertyDescriptor, getPrototypeOf, hasOwn, is, isArray, mapForEach,
                        mapSizeGet, objToString, ownKeys, regexpSourceGet, regexpToString, safeString,
                        setForEach, setSizeGet, stringify, symToString, taLengthGet, taTagGet, GLOBAL_CTORS
                });
                if (m === null || typeof m !== 'object' || typeof m.inspect !== 'function')
                        throw new ErrorC('chidori: the format module did not load');
                formatModule = m;
        }
        return formatModule;
}
function format(args) {
        return fmt().format(args);
}
function inspect(v, depthLimit) {
        return fmt().inspect(v, depthLimit);
}
function formatError(e) {
        return fmt().formatError(e);
}

/* ------------------------------------------------------------- console */

function sendLog(level, message) {
        hostSend('log', { level, message });
}
function logMethod(name, level) {
        const f = function (...a) {
                sendLog(level, format(a));
        };
        defineProperty(f, 'name', { value: name });
        return f;
}
const counts = create(null);
const timersByLabel = create(null);
const consoleObject = {
        log: logMethod('log', 'info'),
        info: logMethod('info', 'info'),
        debug: logMethod('debug', 'debug'),
        warn: logMethod('warn', 'warn'),
        error: logMethod('error', 'error'),
        trace: logMethod('trace', 'debug'),
        dir(v) {
                sendLog('info', inspect(v));
        },
        table(...a) {
                sendLog('info', format(a));
        },
        assert(cond, ...a) {
                if (!cond)
                        sendLog('error', 'Assertion failed' + (a.length ? ': ' + format(a) : ''));
        },
        count(label = 'default') {
                label = safeString(label);
                counts[label] = (counts[label] || 0) + 1;
                sendLog('info', label + ': ' + counts[label]);
        },
        countReset(label = 'default') {
                delete counts[safeString(label)];
        },
        time(label = 'default') {
                timersByLabel[safeString(label)] = performanceNow();
        },
        timeLog(label = 'default', ...a) {
                label = safeString(label);
                const t = timersByLabel[label];
                if (t !== undefined)
                        sendLog('info', label + ': ' + (performanceNow() - t) + 'ms' + (a.length ? ' ' + format(a) : ''));
        },
        timeEnd(label = 'default') {
                label = safeString(label);
                const t = timersByLabel[label];
                if (t !== undefined) {
                        delete timersByLabel[label];
                        sendLog('info', label + ': ' + (performanceNow() - t) + 'ms');
                }
        },
        group() {},
        groupCollapsed() {},
        groupEnd() {},
};

/* ------------------------------------------------------------- chidori.* */

const chidori = {
        log(...a) {
                return hostCall('log', { level: 'info', message: format(a) });
        },
        memory: {
                get(key) {
                        try {
                                needString('chidori.memory.get: key', key);
                        } catch (e) {
                                return rejected(e);
                        }
                        return hostCall('memory.get', { key });
                },
                set(key, value) {
                        try {
                                needString('chidori.memory.set: key', key);
                        } catch (e) {
                                return rejected(e);
                        }
                        return hostCall('memory.set', { key, value: value === undefined ? null : value });
                },
                delete(key) {
                        try {
                                needString('chidori.memory.delete: key', key);
                        } catch (e) {
                                return rejected(e);
                        }
                        return hostCall('memory.delete', { key });
                },
                list(prefix) {
                        if (prefix === undefined || prefix === null)
                                prefix = '';
                        try {
                                needString('chidori.memory.list: prefix', prefix);
                        } catch (e) {
                                return rejected(e);
                        }
                        return hostCall('memory.list', { prefix });
                },
        },
        template(template, vars) {
                if (vars === undefined || vars === null)
                        vars = {};
                try {
                        needString('chidori.template: template', template);
                        if (typeof vars !== 'object')
                                throw new TypeErrorC('chidori.template: vars must be an object');
                } catch (e) {
                        return rejected(e);
                }
                return hostCall('template', { template, vars });
        },
        checkpoint(label) {
                return hostCall('checkpoint', { label: label === undefined || label === null ? null : safeString(label) });
        },
        input(prompt) {
                return hostCall('input', { prompt: prompt === undefined || prompt === null ? '' : safeString(prompt) });
        },
        // prompt(text, {system, model, temperature, max_tokens, messages}) -> the
        // model's reply text.  The parent holds the provider key.
        prompt(text, options) {
                let args;
                try {
                        needString('chidori.prompt: text', text);
                        args = { text, options: plainOptions('chidori.prompt: options', options) };
                } catch (e) {
                        return rejected(e);
                }
                return apply(promiseThen, hostCall('prompt', args), [(v) => {
                        if (v === null || typeof v !== 'object' || typeof v.text !== 'string')
                                throw new TypeErrorC('prompt: malformed answer from the parent');
                        return v.text;
                }]);
        },
        // tool(name, args, {signal}) -> the JSON value the tool printed.
        tool(name, args, options) {
                let signal;
                try {
                        needString('chidori.tool: name', name);
                        signal = plainOptions('chidori.tool: options', options).signal;
                } catch (e) {
                        return rejected(e);
                }
                return signalled('tool', { name, args: args === undefined ? null : args }, signal);
        },
        // callAgent(path, input, {policy, signal}) -> the other agent's result.
        callAgent(path, input, options) {
                let args, signal;
                try {
                        needPath('chidori.callAgent: path', path);
                        const o = plainOptions('chidori.callAgent: options', options);
                        signal = o.signal;
                        const sent = {};
                        const ks = ownKeys(o);
                        for (let i = 0; i < ks.length; i++)
                                if (typeof ks[i] === 'string' && ks[i] !== 'signal')
                                        sent[ks[i]] = o[ks[i]];
                        args = { path, input: input === undefined ? null : input, options: sent };
                } catch (e) {
                        return rejected(e);
                }
                return signalled('agent.call', args, signal);
        },
        workspace: {
                list(path) {
                        if (path === undefined || path === null)
                                path = '';
                        try {
                                needPath('chidori.workspace.list: path', path);
                        } catch (e) {
                                return rejected(e);
                        }
                        return hostCall('workspace.list', { path });
                },
                // read(path) -> string (UTF-8); read(path, 'bytes') or
                // read(path, {encoding: null}) -> Uint8Array.
                read(path, options) {
                        let enc = 'utf8';
                        try {
                                needPath('chidori.workspace.read: path', path);
                                enc = readEncoding(options);
                        } catch (e) {
                                return rejected(e);
                        }
                        return apply(promiseThen, hostCall('workspace.read', { path }), [(v) => {
                                const bytes = base64Decode(StringC(v.data_base64));
                                return enc === 'bytes' ? bytes : utf8Decode(bytes);
                        }]);
                },
                // write(path, string | Uint8Array | ArrayBuffer | DataView, {createDirs = true})
                write(path, data, options) {
                        let args;
                        try {
                                needPath('chidori.workspace.write: path', path);
                                const createDirs = options === undefined || options === null || options.createDirs === undefined
                                        ? true : !!options.createDirs;
                                args = { path, data_base64: base64Encode(toBytes('chidori.workspace.write: data', data)),
                                         create_dirs: createDirs };
                        } catch (e) {
                                return rejected(e);
                        }
                        return hostCall('workspace.write', args);
                },
                delete(path) {
                        try {
                                needPath('chidori.workspace.delete: path', path);
                        } catch (e) {
                                return rejected(e);
                        }
                        return hostCall('workspace.delete', { path });
                },
                manifest() {
                        return hostCall('workspace.manifest', {});
                },
        },
};
freeze(chidori.memory);
freeze(chidori.workspace);
freeze(chidori);


/* ------------------------------------------------------------- time */

let virtualTime = true;  // set by start(): --virtual-time (decision 6), else real time
let virtualNow = 0;  // ms the virtual timer clock has advanced (stays 0 in real time)

// Wall time: the host's clock.now plus the virtual time timers have
// advanced, so code that sleeps with setTimeout sees time pass.
function now() {
        const t = NumberC(hostCallSync('clock.now', {}));
        if (!(t === t && t !== Infinity && t !== -Infinity))
                throw new TypeErrorC('clock.now returned a non-number');
        return floor(t) + virtualNow;
}

// performance.now(): in real time a clock.mono call each time (ms since the
// run started, monotonic, to the microsecond; journaled like clock.now, so
// it costs what Date.now() costs).  Under --virtual-time it follows the
// virtual clock, counted from its first use.
let perfOrigin;
function performanceNow() {
        if (!virtualTime) {
                const m = NumberC(hostCallSync('clock.mono', {}));
                if (!(m === m && m !== Infinity && m !== -Infinity))
                        throw new TypeErrorC('clock.mono returned a non-number');
                return m;
        }
        const t = now();
        if (perfOrigin === undefined)
                perfOrigin = t;
        return t - perfOrigin;
}
const performance = {
        now() {
                return performanceNow();
        },
};

const DateShim = function Date(...args) {
        if (new.target === undefined)
                return new RealDate(now()).toString();  // Date() ignores its arguments
        if (args.length === 0)
                return construct(RealDate, [now()], new.target);
        return construct(RealDate, args, new.target);
};
defineProperty(DateShim, 'length', { value: 7 });
defineProperty(DateShim, 'prototype', { value: RealDate.prototype, writable: false, enumerable: false, configurable: false });
define(DateShim, 'now', function now_() {
        return now();
});
defineProperty(DateShim.now, 'name', { value: 'now' });
define(DateShim, 'parse', RealDate.parse);
define(DateShim, 'UTC', RealDate.UTC);
define(RealDate.prototype, 'constructor', DateShim);

// Intl.DateTimeFormat#format() and #formatToParts() with no date read the
// current time: route them through now() too.
try {
        const dtf = Intl.DateTimeFormat.prototype;
        const formatGet = getOwnPropertyDescriptor(dtf, 'format').get;
        const formatToParts = dtf.formatToParts;
        defineProperty(dtf, 'format', {
                get() {
                        const f = apply(formatGet, this, []);
                        return function (date) {
                                return f(date === undefined ? now() : date);
                        };
                },
                enumerable: false,
                configurable: true,
        });
        define(dtf, 'formatToParts', function formatToParts_(date) {
                return apply(formatToParts, this, [date === undefined ? now() : date]);
        });
} catch (e) { /* no Intl */ }

/* ------------------------------------------------------------- randomness */

// xoshiro128** (Blackman & Vigna), seeded once from the host's random.seed.
let s0 = 0, s1 = 0, s2 = 0, s3 = 0, seeded = false;
function seed() {
        const hex = hostCallSync('random.seed', {});
        if (typeof hex !== 'string' || !/^[0-9a-fA-F]{64}$/.test(hex))
                throw new TypeErrorC('random.seed returned a malformed seed');
        // Mix all 256 bits into the 128-bit state (a plain fold would turn a
        // seed with equal halves into the all-zero state).
        const st = [0, 0, 0, 0];
        let acc = 0x6a09e667;
        for (let i = 0; i < 8; i++) {
                acc = mix32((acc ^ parseInt(hex.slice(i * 8, i * 8 + 8), 16)) + 0x9e3779b9);
                st[i & 3] ^= acc;
        }
        s0 = st[0];
        s1 = st[1];
        s2 = st[2];
        s3 = st[3];
        if ((s0 | s1 | s2 | s3) === 0)
                s0 = 1;
        seeded = true;
}
// lowbias32 (C. Wellons): a 32-bit integer hash with good avalanche.
function mix32(x) {
        x ^= x >>> 16;
        x = imul(x, 0x7feb352d);
        x ^= x >>> 15;
        x = imul(x, 0x846ca68b);
        return x ^ (x >>> 16);
}
function next32() {
        const r = imul(rotl(imul(s1, 5), 7), 9);
        const t = s1 << 9;
        s2 ^= s0;
        s3 ^= s1;
        s1 ^= s2;
        s0 ^= s3;
        s2 ^= t;
        s3 = rotl(s3, 11);
        return r >>> 0;
}
function rotl(x, k) {
        return (x << k) | (x >>> (32 - k));
}
function random() {
        if (!seeded)
                seed();
        // 53 random bits, like a double from [0, 1).
        return ((next32() >>> 5) * 67108864 + (next32() >>> 6)) / 9007199254740992;
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
let b64map;
function base64Decode(s) {
        if (!b64map) {
                b64map = new Int16Array(128).fill(-1);
                for (let i = 0; i < 64; i++)
                        b64map[B64.charCodeAt(i)] = i;
        }
        const out = new Uint8ArrayC((s.length * 3) >> 2);
        let acc = 0, bits = 0, j = 0;
        for (let i = 0; i < s.length; i++) {
                const c = s.charCodeAt(i);
                if (c === 61)  // '='
                        break;
                const v = c < 128 ? b64map[c] : -1;
                if (v < 0)
                        throw new TypeErrorC('the parent sent malformed base64');
                acc = ((acc << 6) | v) & 0xffffff;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[j++] = (acc >> bits) & 255;
                }
        }
        return j === out.length ? out : out.subarray(0, j);
}

const MAX_RANDOM_BYTES = 65536;
function randomBytes(n) {
        const b = base64Decode(StringC(hostCallSync('random.bytes', { n })));
        if (b.length !== n)
                throw new TypeErrorC('random.bytes returned ' + b.length + ' bytes, expected ' + n);
        return b;
}

const INTEGER_ARRAYS = {
        Int8Array: 1, Uint8Array: 1, Uint8ClampedArray: 1, Int16Array: 1, Uint16Array: 1,
        Int32Array: 1, Uint32Array: 1, BigInt64Array: 1, BigUint64Array: 1,
};
function domException(message, name, Fallback) {
        const D = web().DOMException;
        return typeof D === 'function' ? new D(message, name) : new Fallback(message);
}
function getRandomValues(array) {
        const tag = apply(taTagGet, array, []);
        if (tag === undefined || !apply(hasOwn, INTEGER_ARRAYS, [tag]))
                throw domException("Failed to execute 'getRandomValues' on 'Crypto': The provided ArrayBufferView is not an integer array type",
                                   'TypeMismatchError', TypeErrorC);
        const n = apply(taByteLengthGet, array, []);
        if (n > MAX_RANDOM_BYTES)
                throw domException("Failed to execute 'getRandomValues' on 'Crypto': The ArrayBufferView's byte length (" +
                                   n + ') exceeds the number of bytes of entropy available via this API (65536)',
                                   'QuotaExceededError', RangeErrorC);
        if (n > 0) {
                const view = new Uint8ArrayC(apply(taBufferGet, array, []), apply(taByteOffsetGet, array, []), n);
                apply(u8Set, view, [randomBytes(n)]);
        }
        return array;
}
const HEX = '0123456789abcdef';
function randomUUID() {
        const b = randomBytes(16);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let s = '';
        for (let i = 0; i < 16; i++) {
                if (i === 4 || i === 6 || i === 8 || i === 10)
                        s += '-';
                s += HEX[b[i] >> 4] + HEX[b[i] & 15];
        }
        return s;
}
const crypto = { getRandomValues, randomUUID };
defineProperty(crypto, 'subtle', {
        get() {
                loadCrypto();
                return cryptoSubtle;
        },
        enumerable: true,
        configurable: false,
});

/* ------------------------------------------------------------- timers */

// Real time (the default): each timer is a pending timer.wait call the
// parent answers when it is due (journaled, so replay delivers it in the
// recorded order without waiting); clearTimeout cancels the call
// (call.cancel), and an answer that arrives for a cleared timer is dropped.
// --virtual-time: timers never wait: when nothing else can happen, the
// engine's loop calls fireTimer(), which advances the virtual clock to the
// earliest timer (by due time, then creation order) and runs it.
const TIMEOUT_MAX = 2147483647;
const timers = create(null);  // id -> timer, while active
const heap = [];
let nextTimerId = 1, timerSeq = 0;

function earlier(a, b) {
        return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}
function heapPush(t) {
        let i = heap.length;
        heap[i] = t;
        timersQueued[0] = 1;
        while (i > 0) {
                const p = (i - 1) >> 1;
                if (!earlier(heap[i], heap[p]))
                        break;
                const x = heap[i];
                heap[i] = heap[p];
                heap[p] = x;
                i = p;
        }
}
function heapPop() {
        const n = heap.length;
        if (n === 0)
                return undefined;
        const top = heap[0];
        heap[0] = heap[n - 1];
        heap.length = n - 1;
        if (n === 1)
                timersQueued[0] = 0;
        for (let i = 0, m = n - 1;;) {
                const l = 2 * i + 1, r = l + 1;
                let s = i;
                if (l < m && earlier(heap[l], heap[s]))
                        s = l;
                if (r < m && earlier(heap[r], heap[s]))
                        s = r;
                if (s === i)
                        break;
                const x = heap[i];
                heap[i] = heap[s];
                heap[s] = x;
                i = s;
        }
        return top;
}

function addTimer(fn, delay, args, repeat, immediate) {
        if (typeof fn !== 'function')
                throw new TypeErrorC('The "callback" argument must be of type function');
        // As Node: delays below 1 ms or above TIMEOUT_MAX become 1 ms.
        // setImmediate's are due now: before any timer of 1 ms or more.
        let d = NumberC(delay);
        if (!(d >= 1 && d <= TIMEOUT_MAX))
                d = 1;
        d = immediate ? 0 : floor(d);
        const t = { id: nextTimerId++, due: virtualNow + d, seq: timerSeq++, fn, args, delay: d, repeat, call: 0 };
        timers[t.id] = t;
        // setImmediate stays in the box in real time too: fireTimer runs
        // the ones queued before the worker waits for an answer.
        if (virtualTime || immediate)
                heapPush(t);
        else
                armTimer(t);
        return t.id;
}

// Real time: ask the parent to answer when the timer is due.  A failure
// (the --max-timers limit) ends the run like an exception in a timer.
function armTimer(t) {
        const call = nativeCall('timer.wait', stringify({ ms: t.delay }));
        t.call = call;
        pending[call] = {
                resolve: () => fireRealTimer(t, call),
                reject: (e) => {
                        if (timers[t.id] === t && t.call === call) {
                                delete timers[t.id];
                                fail(e);
                        }
                },
        };
}
function fireRealTimer(t, call) {
        if (timers[t.id] !== t || t.call !== call)
                return;  // cleared meanwhile: its answer came before the cancel
        t.call = 0;
        if (!t.repeat)
                delete timers[t.id];
        try {
                apply(t.fn, undefined, t.args);
        } catch (e) {
                fail(e);  // an exception in a timer ends the run
                return;
        }
        if (t.repeat && timers[t.id] === t)
                armTimer(t);
}

// Give up pending call `id` (call.cancel): the parent answers it at once
// with an AbortError and stops its effect.  Fire-and-forget.
function cancelCall(id) {
        if (pending[id] !== undefined)
                hostSend('call.cancel', { id });
}

// A host call the caller can give up: {promise, cancel()}.  fetch's signal
// uses it; the promise rejects with an AbortError once cancelled.
function hostCallCancellable(op, args) {
        let resolve, reject;
        const promise = new PromiseC((res, rej) => {
                resolve = res;
                reject = rej;
        });
        let id = 0;
        try {
                id = nativeCall(op, stringify(args));
                pending[id] = { resolve, reject };
        } catch (e) {
                reject(e);
        }
        return { promise, cancel: () => {
                if (id)
                        cancelCall(id);
        } };
}
// A host call an AbortSignal may give up (tool, callAgent): call.cancel
// stops the child in the parent; the promise rejects with the parent's
// AbortError.  An already aborted signal rejects at once, with its reason.
function signalled(op, args, signal) {
        if (signal === undefined || signal === null)
                return hostCall(op, args);
        if (typeof signal !== 'object' || typeof signal.addEventListener !== 'function')
                return rejected(new TypeErrorC('chidori.' + (op === 'tool' ? 'tool' : 'callAgent') +
                                               ': options.signal must be an AbortSignal'));
        if (signal.aborted)
                return rejected(signal.reason);
        const c = hostCallCancellable(op, args);
        signal.addEventListener('abort', () => c.cancel(), { once: true });
        return c.promise;
}
function setTimeout(fn, delay, ...args) {
        return addTimer(fn, delay, args, false);
}
function setInterval(fn, delay, ...args) {
        return addTimer(fn, delay, args, true);
}
function clearTimeout(id) {
        if (typeof id !== 'number')
                return;
        const t = timers[id];
        if (t === undefined)
                return;
        delete timers[id];
        if (t.call)
                cancelCall(t.call);
}
function clearInterval(id) {
        clearTimeout(id);
}
function setImmediate(fn, ...args) {
        return addTimer(fn, 0, args, false, true);
}
function clearImmediate(id) {
        clearTimeout(id);
}

function fireTimer(busy) {
        for (;;) {
                if (busy && (heap.length === 0 || heap[0].due > virtualNow))
                        return false;
                const t = heapPop();
                if (t === undefined)
                        return false;
                if (timers[t.id] !== t)
                        continue;  // cleared
                if (t.due > virtualNow)
                        virtualNow = t.due;
                if (!t.repeat)
                        delete timers[t.id];
                try {
                        apply(t.fn, undefined, t.args);
                } catch (e) {
                        fail(e);  // an exception in a timer ends the run
                        return true;
                }
                if (t.repeat && timers[t.id] === t) {
                        t.due = virtualNow + t.delay;
                        t.seq = timerSeq++;
                        heapPush(t);
                }
                return true;
        }
}

/* ------------------------------------------------------------- require */

/* The engine's own modules load on first use (native load): each defines
 * one hidden global, __chidoriInstall<Name>, that is captured and deleted
 * here in the same synchronous step, so agent code never sees it. */
function loadModule(name, global) {
        nativeLoad(name);
        const install = G[global];
        delete G[global];
        if (typeof install !== 'function')
                throw new ErrorC('chidori: the ' + name + ' module did not load');
        return install;
}

// A Blob/File/FormData fetch body: only the surface bundle makes them, so
// while it is not loaded there is none.
function surfaceBody(v) {
        return 'blob' in nodeParts ? nodeParts.blob.bodyOf(v, randomHex) : null;
}
function randomHex(n) {
        let s = '';
        for (let i = 0; i < n; i++)
                s += HEX[floor(random() * 16)];
        return s;
}
const hostApi = freeze({
        call: hostCall, callSync: hostCallSync, callCancellable: hostCallCancellable, setTimeout,
        reportError: (e) => fail(e), surfaceBody, web,
        parseForm: (bytes, type) => nodePart('blob').parseForm(bytes, type),
        streams: (load) => (load || 'streams' in nodeParts ? nodePart('streams') : null),
});

let fetchLoaded = false;
function loadFetch() {
        if (!fetchLoaded) {
                fetchLoaded = true;
                for (let i = 0; i < FETCH_GLOBALS.length; i++)
                        define(G, FETCH_GLOBALS[i], undefined);
                loadModule('fetch', '__chidoriInstallFetch')(hostApi);
        }
}
// fetch, Headers, Request, Response (and AbortController/AbortSignal) are
// accessors until first touched; then fetch.js replaces them with its own.
const FETCH_GLOBALS = ['fetch', 'Headers', 'Request', 'Response', 'AbortController', 'AbortSignal'];
function lazyFetchGlobal(name) {
        defineProperty(G, name, {
                get() {
                        loadFetch();
                        return G[name];
                },
                set(v) {
                        define(G, name, v);
                },
                enumerable: false,
                configurable: true,
        });
}

let cryptoModule, cryptoSubtle;
function loadCrypto() {
        if (!cryptoModule) {
                const r = loadModule('crypto', '__chidoriInstallCrypto')(freeze({ getRandomValues, randomUUID }));
                cryptoModule = r.module;
                cryptoSubtle = r.subtle;
                define(cryptoModule, 'webcrypto', crypto);  // as in Node: require('crypto').webcrypto === globalThis.crypto
        }
        return cryptoModule;
}

let fsModule;
function loadFs() {
        if (!fsModule)
                fsModule = loadModule('fs', '__chidoriInstallFs')(hostApi);
        return fsModule;
}

/* ------------------------------------------------------------- the Node/Web surface */

/* engine/node/ and its npm packages, bundled by esbuild into parts
 * (engine/node/build.mjs): each part is evaluated on first use, given this
 * require() for the parts it uses (so there is one Buffer class). */
const nodeParts = create(null);  // part -> its exports, once loaded
let nodeHost;
function nodePart(name) {
        if (name in nodeParts)
                return nodeParts[name];
        if (name === 'host') {
                if (!nodeHost)
                        nodeHost = freeze({ format, inspect: (v, depth) => inspect(v, depth), setTimeout, clearTimeout,
                                            setInterval, clearInterval, setImmediate, clearImmediate });
                return nodeHost;
        }
        if (name === 'process')
                return getProcess();
        const install = loadModule('node.' + name, '__chidoriNodePart');
        const module = { exports: {} };
        nodeParts[name] = module.exports;  // a cycle sees the exports so far, as in Node
        try {
                apply(install, undefined, [nodePart, module, module.exports]);
        } catch (e) {
                delete nodeParts[name];  // as Node: a module that threw is not cached
                throw e;
        }
        return (nodeParts[name] = module.exports);
}
// The node: modules (and their subpaths) the surface provides: name -> the
// part, and the export of it when the module is one member ('.member').
const NODE_MODULES = create(null);
NODE_MODULES.assert = 'assert';
NODE_MODULES['assert/strict'] = 'assert.strict';
NODE_MODULES.buffer = 'buffer';  // with Blob, File, atob, btoa (nodeModule)
NODE_MODULES.events = 'events';
NODE_MODULES.path = NODE_MODULES['path/posix'] = 'path';
NODE_MODULES.querystring = 'querystring';
NODE_MODULES.stream = 'stream';
NODE_MODULES['stream/promises'] = 'stream.promises';
NODE_MODULES['stream/web'] = 'streams';
NODE_MODULES.string_decoder = 'stringDecoder';
NODE_MODULES.timers = 'timers.timers';
NODE_MODULES['timers/promises'] = 'timers.promises';
NODE_MODULES.url = 'url';
NODE_MODULES.util = 'util';
NODE_MODULES['util/types'] = 'util.types';
function makeNodeModule(n) {
        const spec = NODE_MODULES[n], dot = spec.indexOf('.');
        if (dot >= 0)
                return nodePart(spec.slice(0, dot))[spec.slice(dot + 1)];
        if (n !== 'buffer')
                return nodePart(spec);
        const b = nodePart('buffer'), w = nodePart('blob'), m = {};
        const keys = O.keys(b);
        for (let i = 0; i < keys.length; i++)
                m[keys[i]] = b[keys[i]];
        m.Blob = w.Blob;
        m.File = w.File;
        m.atob = web().atob;
        m.btoa = web().btoa;
        return m;
}
const nodeModuleCache = create(null);
function nodeModule(n) {
        if (!(n in nodeModuleCache))
                nodeModuleCache[n] = makeNodeModule(n);
        return nodeModuleCache[n];
}
// The globals the surface provides: name -> the part that exports it.
const NODE_GLOBALS = create(null);
NODE_GLOBALS.Buffer = 'buffer';
NODE_GLOBALS.Event = NODE_GLOBALS.EventTarget = NODE_GLOBALS.CustomEvent = 'webEvents';
NODE_GLOBALS.Blob = NODE_GLOBALS.File = NODE_GLOBALS.FormData = 'blob';
{
        const names = ['TextEncoderStream', 'TextDecoderStream', 'ReadableStream', 'ReadableStreamDefaultReader',
                'ReadableStreamBYOBReader', 'ReadableStreamBYOBRequest', 'ReadableByteStreamController',
                'ReadableStreamDefaultController', 'WritableStream', 'WritableStreamDefaultWriter',
                'WritableStreamDefaultController', 'TransformStream', 'TransformStreamDefaultController',
                'ByteLengthQueuingStrategy', 'CountQueuingStrategy'];
        for (let i = 0; i < names.length; i++)
                NODE_GLOBALS[names[i]] = 'streams';
}

// web.js's globals: accessors until the first read of one (then all are
// the values web.js defined); a write replaces the accessor, as for any
// lazy global.
function lazyWebGlobal(name) {
        const get = () => {
                web();
                return G[name];
        };
        webGetters[name] = get;
        defineProperty(G, name, {
                get,
                set(v) {
                        define(G, name, v);
                },
                enumerable: false,
                configurable: true,
        });
}

// A global that is an accessor until first read, then the value itself.
function lazyGlobal(name, make) {
        defineProperty(G, name, {
                get() {
                        const v = make();
                        define(G, name, v);
                        return v;
                },
                set(v) {
                        define(G, name, v);
                },
                enumerable: false,
                configurable: true,
        });
}

/* process: a controlled object (engine/process.js, loaded on first use).
 * env holds only what the operator passed with --env (the init frame). */
const CHIDORI_VERSION = '0.1.0';  // cli/cli.h's CHIDORI_VERSION (tests/bats/surface.bats checks)
// process.nextTick's queue: a microtask, without evaluating web.js for it.
function queueMicrotaskC(fn) {
        apply(promiseThen, apply(promiseResolve, PromiseC, []), [() => fn()]);
}
let runEnv = null, processObj;
function getProcess() {
        if (!processObj)
                processObj = loadModule('process', '__chidoriInstallProcess')(freeze({
                        env: runEnv, file: agentFile, version: CHIDORI_VERSION, exit: exitRun, fail, now: performanceNow,
                        warn: (w) => sendLog('warn', typeof w === 'string' ? 'Warning: ' + w : formatError(w)),
                        queueMicrotask: queueMicrotaskC,
                }));
        return processObj;
}

function exitRun(code) {
        if (settled)
                return;
        settled = true;
        // The parent maps {"exit": n} to exit status n (docs/api.md, process.exit).
        nativeFinish(code === 0 ? '{"type":"done","ok":true,"value":null,"exit":0}'
                : stringify({ type: 'done', ok: false, kind: 'exit', exit: code,
                              error: { name: 'Exit', message: 'the agent called process.exit(' + code + ')', stack: '' } }), true);
}

const navigatorObj = {
        userAgent: 'chidori/' + CHIDORI_VERSION,
        hardwareConcurrency: 1,
        language: 'en-US',
        languages: freeze(['en-US']),
        platform: 'linux',
        onLine: true,
};
defineProperty(navigatorObj, Symbol.toStringTag, { value: 'Navigator', configurable: true });
freeze(navigatorObj);

const BUILTIN = create(null);
BUILTIN['node:fs'] = BUILTIN.fs = () => loadFs().fs;
BUILTIN['node:fs/promises'] = BUILTIN['fs/promises'] = () => loadFs().promises;
BUILTIN['node:crypto'] = BUILTIN.crypto = loadCrypto;
BUILTIN['node:process'] = BUILTIN.process = getProcess;

// Node's built-in modules, for the message when an agent asks for one the
// sandbox does not have (cli/agent.c keeps the same list).
const NODE_BUILTINS = create(null);
{
        const names = ['assert', 'async_hooks', 'buffer', 'child_process', 'cluster', 'console', 'constants',
                'crypto', 'dgram', 'diagnostics_channel', 'dns', 'domain', 'events', 'fs', 'http', 'http2', 'https',
                'inspector', 'module', 'net', 'os', 'path', 'perf_hooks', 'process', 'punycode', 'querystring',
                'readline', 'repl', 'sea', 'sqlite', 'stream', 'string_decoder', 'sys', 'test', 'timers', 'tls',
                'trace_events', 'tty', 'url', 'util', 'v8', 'vm', 'wasi', 'worker_threads', 'zlib'];
        for (let i = 0; i < names.length; i++)
                NODE_BUILTINS[names[i]] = true;
}
function isNodeBuiltin(n) {
        if (n.length > 5 && n.slice(0, 5) === 'node:')
                return true;
        const slash = n.indexOf('/');
        return NODE_BUILTINS[slash < 0 ? n : n.slice(0, slash)] === true;
}

// The node: modules there are, for the message (cli/agent.c keeps the same).
const PROVIDED = 'node:assert, node:buffer, node:crypto, node:events, node:fs, node:fs/promises, node:path, ' +
        'node:process, node:querystring, node:stream, node:string_decoder, node:timers, node:url, node:util';

function require(name) {
        const n = safeString(name);
        if (BUILTIN[n])
                return BUILTIN[n]();
        const bare = n.length > 5 && n.slice(0, 5) === 'node:' ? n.slice(5) : n;
        if (NODE_MODULES[bare] !== undefined)
                return nodeModule(bare);
        const e = new ErrorC(isNodeBuiltin(n)
                ? "Cannot find module '" + n + "': it is not available in the chidori sandbox (it provides " +
                        PROVIDED + ')'
                : "Cannot find module '" + n + "': chidori agents are one script; bundle dependencies with esbuild");
        define(e, 'code', 'MODULE_NOT_FOUND');
        throw e;
}

/* ------------------------------------------------------------- running the agent */

let agentFile = '', prefixLen = 0, settled = false;

// JSC frames look like "fn@file:line:column".  Columns on the script's first
// line include the module wrapper's prefix; take it off.
function fixFrame(l) {
        const c2 = l.lastIndexOf(':');
        const c1 = c2 > 0 ? l.lastIndexOf(':', c2 - 1) : -1;
        if (c1 < 0 || l.slice(c1 + 1, c2) !== '1')
                return l;
        if (l.slice(l.lastIndexOf('@', c1) + 1, c1) !== agentFile)
                return l;
        const col = +l.slice(c2 + 1);
        return col > prefixLen ? l.slice(0, c2 + 1) + (col - prefixLen) : l;
}
// Also drops the engine's own frames (chidori:prelude.js, chidori:web.js).
function fixStack(stack) {
        const fix = agentFile && stack.indexOf(agentFile + ':1:') !== -1;
        if (!fix && stack.indexOf('chidori:') === -1)
                return stack;
        const lines = stack.split('\n'), out = [];
        for (let i = 0; i < lines.length; i++) {
                const l = lines[i];
                const at = l.lastIndexOf('@');
                if (l.slice(at + 1, at + 9) === 'chidori:')
                        continue;
                out[out.length] = fix ? fixFrame(l) : l;
        }
        return out.join('\n');
}
// The first frame of the stack that is in the agent's file: [line, column].
function agentFrame(stack) {
        const lines = stack.split('\n');
        for (let i = 0; i < lines.length; i++) {
                const l = lines[i];
                const c2 = l.lastIndexOf(':');
                const c1 = c2 > 0 ? l.lastIndexOf(':', c2 - 1) : -1;
                if (c1 > 0 && l.slice(l.lastIndexOf('@', c1) + 1, c1) === agentFile)
                        return [+l.slice(c1 + 1, c2), +l.slice(c2 + 1)];
        }
        return null;
}

function errorInfo(e) {
        const info = { name: 'Error', message: '', stack: '' };
        if (e === null || (typeof e !== 'object' && typeof e !== 'function')) {
                info.message = typeof e === 'string' ? e : inspect(e);
                return info;
        }
        let name, message, stack, line, column, url;
        try {
                name = e.name;
        } catch (x) { /* absent */ }
        try {
                message = e.message;
        } catch (x) { /* absent */ }
        try {
                stack = e.stack;
        } catch (x) { /* absent */ }
        try {
                line = e.line;
                column = e.column;
                url = e.sourceURL;
        } catch (x) { /* absent */ }
        if (name === undefined && message === undefined) {
                info.message = inspect(e);  // throw {code: 1}
        } else {
                if (name !== undefined)
                        info.name = safeString(name);
                if (message !== undefined)
                        info.message = safeString(message);
        }
        let where = null;
        if (url === agentFile && typeof line === 'number' && typeof column === 'number')
                where = [line, column];
        else if (typeof stack === 'string')
                where = agentFrame(stack);
        if (typeof stack === 'string')
                info.stack = fixStack(stack);
        if (where) {
                if (where[0] === 1 && where[1] > prefixLen)
                        where[1] -= prefixLen;
                info.file = agentFile;
                info.line = where[0];
                info.column = where[1];
        }
        return info;
}

function errorDone(e) {
        return stringify({ type: 'done', ok: false, kind: 'error', error: errorInfo(e) });
}

function ok(v) {
        if (settled)
                return;
        settled = true;
        let text;
        try {
                let vs = stringify(v === undefined ? null : v);
                if (vs === undefined)
                        vs = 'null';  // a function or a symbol
                text = '{"type":"done","ok":true,"value":' + vs + '}';
        } catch (e) {
                text = errorDone(e);  // BigInt, cycle, a throwing toJSON
        }
        nativeFinish(text);
}

function fail(e) {
        if (settled)
                return;
        settled = true;
        let text;
        try {
                text = errorDone(e);
        } catch (x) {
                text = '{"type":"done","ok":false,"kind":"error","error":{"name":"Error","message":"the agent failed with an unprintable error","stack":""}}';
        }
        nativeFinish(text);
}

function noEntry() {
        settled = true;
        nativeFinish(stringify({
                type: 'done',
                ok: false,
                kind: 'no_entry',
                error: {
                        name: 'Error',
                        message: 'no entry point: the agent must export a default function ' +
                                '(export default async function main(input, ctx) {...}), assign a function to ' +
                                'module.exports, or define a function named main',
                },
        }));
}

function start(wrapper, input, runId, filename, plen, esm, env, virtual) {
        virtualTime = virtual !== false;
        agentFile = filename;
        prefixLen = plen;
        runEnv = env === undefined ? null : env;
        try {
                const module = { exports: {} };
                const main = apply(wrapper, module.exports, [module, module.exports, require]);
                // An ES-module bundle's wrapper is async (top-level await):
                // pick the entry once the module body has finished.
                if (esm)
                        apply(promiseThen, main, [(m) => enter(module, m, input, runId, filename), fail]);
                else
                        enter(module, main, input, runId, filename);
        } catch (e) {
                fail(e);
        }
}

function enter(module, main, input, runId, filename) {
        try {
                const ex = module.exports;
                let entry;
                if (ex !== null && (typeof ex === 'object' || typeof ex === 'function') && typeof ex.default === 'function')
                        entry = ex.default;
                else if (typeof ex === 'function')
                        entry = ex;
                else if (typeof main === 'function')
                        entry = main;
                else
                        return noEntry();
                const r = apply(entry, undefined, [input, { runId, filename }]);
                if (r !== null && (typeof r === 'object' || typeof r === 'function') && typeof r.then === 'function')
                        apply(promiseThen, apply(promiseResolve, PromiseC, [r]), [ok, fail]);
                else
                        ok(r);
        } catch (e) {
                fail(e);
        }
}

/* ------------------------------------------------------------- globals */

for (let i = 0; i < WEB_GLOBALS.length; i++)
        if (!(WEB_GLOBALS[i] in G))
                lazyWebGlobal(WEB_GLOBALS[i]);
define(G, 'chidori', chidori);
define(G, 'console', consoleObject);
for (let i = 0; i < FETCH_GLOBALS.length; i++)
        if (!(FETCH_GLOBALS[i] in G) || FETCH_GLOBALS[i] === 'fetch')
                lazyFetchGlobal(FETCH_GLOBALS[i]);
define(G, 'setTimeout', setTimeout);
define(G, 'setInterval', setInterval);
define(G, 'clearTimeout', clearTimeout);
define(G, 'clearInterval', clearInterval);
define(G, 'Date', DateShim);
define(G, 'performance', performance);
define(G, 'crypto', crypto);
define(Math, 'random', random);
define(G, 'setImmediate', setImmediate);
define(G, 'clearImmediate', clearImmediate);
define(G, 'navigator', navigatorObj);
lazyGlobal('process', getProcess);
for (const n of O.keys(NODE_GLOBALS))
        if (!(n in G))
                lazyGlobal(n, () => nodePart(NODE_GLOBALS[n])[n]);

// The completion value of this script: the hooks.
({ start, deliver, fireTimer, fail });
}
