/* engine/process.js - the agent's `process` object (docs/api.md, "process").
 *
 * Loaded by the prelude on the first touch of the `process` global or of
 * require('process') (native load); defines one hidden global,
 * __chidoriInstallProcess(host), which the prelude captures, deletes and
 * calls once.  It returns the process object.  host (engine/prelude.js):
 *   env       {NAME: value} the operator passed with --env (the init frame), or null
 *   file      the agent's file name (argv[1])
 *   version   chidori's version
 *   exit(n)   end the run with code n (the done frame carries "exit": n)
 *   fail(e)   end the run with an error
 *   now()     performance.now(): the run's clock, ms
 *   warn(w)   a warning line on the parent's stderr
 *   queueMicrotask
 */
'use strict';
{
const G = globalThis;
const O = Object;
const defineProperty = O.defineProperty;
const create = O.create;
const freeze = O.freeze;
const apply = Reflect.apply;
const floor = Math.floor;
const isArray = Array.isArray;
const NumberC = Number;
const StringC = String;
const BigIntC = BigInt;
const TypeErrorC = TypeError;
const RangeErrorC = RangeError;
const ErrorC = Error;
const objToString = O.prototype.toString;
function safeString(v) {
        try {
                return StringC(v);
        } catch (e) {
                return apply(objToString, v, []);
        }
}

const NODE_VERSION = 'v22.12.0';  // the Node API level the surface follows (docs/api.md)

// nextTick: a queue of its own, drained in one microtask queued by the first
// nextTick after the queue was empty (JSC has no hook before promise jobs).
function makeNextTick(host) {
const ticks = [];
let tickHead = 0;
const queueMicrotaskC = host.queueMicrotask;
function runTicks() {
        try {
                while (tickHead < ticks.length) {
                        const t = ticks[tickHead];
                        ticks[tickHead++] = undefined;
                        apply(t.fn, undefined, t.args);
                }
        } catch (e) {
                host.fail(e);  // as Node: an exception in a tick ends the run
        } finally {
                ticks.length = 0;
                tickHead = 0;
        }
}
function nextTick(fn, ...args) {
        if (typeof fn !== 'function')
                throw new TypeErrorC('The "callback" argument must be of type function. Received ' + typeof fn);
        if (ticks.length === 0)
                apply(queueMicrotaskC, G, [runTicks]);
        ticks[ticks.length] = { fn, args };
}
return nextTick;
}


function makeProcess(host) {
        const events = create(null);
        function listenersOf(type) {
                return events[type] || (events[type] = []);
        }
        const env = create(O.prototype);
        const runEnv = host.env;
        if (runEnv !== null && typeof runEnv === 'object') {
                const keys = O.keys(runEnv);
                for (let i = 0; i < keys.length; i++)
                        if (typeof runEnv[keys[i]] === 'string')
                                env[keys[i]] = runEnv[keys[i]];
        }
        let exitCode;
        const p = {
                title: 'chidori',
                version: NODE_VERSION,
                versions: freeze({ node: NODE_VERSION.slice(1), chidori: host.version }),
                release: freeze({ name: 'node' }),
                platform: 'linux',
                arch: 'x64',
                pid: 1,
                ppid: 0,
                argv: ['chidori', host.file],
                argv0: 'chidori',
                execArgv: [],
                execPath: '/chidori',
                env,
                exitCode: undefined,
                features: freeze({}),
                config: freeze({ variables: freeze({}) }),
                browser: false,
                cwd() {
                        return '/';
                },
                chdir() {
                        throw new ErrorC('process.chdir() is not supported in the chidori sandbox');
                },
                umask() {
                        return 0o22;
                },
                uptime() {
                        return host.now() / 1000;
                },
                hrtime: undefined,
                nextTick: makeNextTick(host),
                exit(code) {
                        let c = code === undefined ? p.exitCode : code;
                        if (c === undefined || c === null)
                                c = 0;
                        c = NumberC(c);
                        if (!(c === floor(c) && c >= 0 && c <= 255))
                                throw new RangeErrorC('process.exit: the code must be an integer from 0 to 255, got ' + safeString(code));
                        p.emit('exit', c);
                        host.exit(c);
                },
                abort() {
                        host.exit(134);
                },
                kill() {
                        throw new ErrorC('process.kill() is not supported in the chidori sandbox');
                },
                memoryUsage: undefined,
                cpuUsage() {
                        return { user: 0, system: 0 };
                },
                resourceUsage() {
                        return {};
                },
                emitWarning(w) {
                        host.warn(w);
                },
                on(type, fn) {
                        const l = listenersOf(type);
                        l[l.length] = { fn, once: false };
                        return p;
                },
                once(type, fn) {
                        const l = listenersOf(type);
                        l[l.length] = { fn, once: true };
                        return p;
                },
                off(type, fn) {
                        const l = events[type];
                        if (l)
                                for (let i = l.length - 1; i >= 0; i--)
                                        if (l[i].fn === fn) {
                                                l.splice(i, 1);
                                                break;
                                        }
                        return p;
                },
                emit(type, ...args) {
                        const l = events[type];
                        if (!l || l.length === 0)
                                return false;
                        const copy = l.slice();
                        for (let i = 0; i < copy.length; i++) {
                                if (copy[i].once)
                                        p.off(type, copy[i].fn);
                                apply(copy[i].fn, p, args);
                        }
                        return true;
                },
                listeners(type) {
                        return (events[type] || []).map((x) => x.fn);
                },
                listenerCount(type) {
                        return (events[type] || []).length;
                },
                removeAllListeners(type) {
                        if (type === undefined) {
                                for (const k of O.keys(events))
                                        delete events[k];
                        } else {
                                delete events[type];
                        }
                        return p;
                },
        };
        p.addListener = p.on;
        p.removeListener = p.off;
        p.prependListener = p.on;
        defineProperty(p, 'exitCode', {
                get() {
                        return exitCode;
                },
                set(v) {
                        if (v !== undefined && v !== null && !(NumberC(v) === floor(NumberC(v))))
                                throw new TypeErrorC('process.exitCode must be an integer, got ' + safeString(v));
                        exitCode = v === null ? undefined : v;
                },
                enumerable: true,
                configurable: true,
        });
        // hrtime from performance.now (the run's clock, virtual or real).
        const hrtime = function hrtime(prev) {
                const t = host.now();
                let sec = floor(t / 1000), ns = floor((t - sec * 1000) * 1e6);
                if (prev !== undefined) {
                        if (!isArray(prev) || prev.length !== 2)
                                throw new TypeErrorC('The "time" argument must be an array of 2 numbers');
                        sec -= prev[0];
                        ns -= prev[1];
                        if (ns < 0) {
                                sec--;
                                ns += 1e9;
                        }
                }
                return [sec, ns];
        };
        hrtime.bigint = function bigint() {
                return BigIntC(floor(host.now() * 1e6));
        };
        p.hrtime = hrtime;
        // A fixed shape; heapUsed etc. are not measured in the worker.
        const memoryUsage = function memoryUsage() {
                return { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
        };
        memoryUsage.rss = () => 0;
        p.memoryUsage = memoryUsage;
        defineProperty(p, Symbol.toStringTag, { value: 'process', configurable: true });
        return p;
}


defineProperty(G, '__chidoriInstallProcess', { value: makeProcess, writable: true, enumerable: false, configurable: true });
}
