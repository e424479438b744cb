// Tiny TAP-like test harness for build/jsrun (JavaScriptCore + print()).
//   test(name, fn)  runs fn now; if it returns a thenable the result is
//                   reported when it settles (jsrun drains microtasks after
//                   each file).
//   assert.equal / notEqual / deepEqual / throws / ok
//   test.initialGlobals: global property names present when this file loaded
// jsrun calls __jsrunDone(loadErrors) at the end: it prints
// "# js: P passed, F failed" and returns F.
(function (G) {
        'use strict';
        var n = 0, passed = 0, failed = 0, pending = new Set();
        // Globals as left by engine/web.js (jsrun loads this file right after it).
        var initialGlobals = Object.getOwnPropertyNames(G);

        function fmt(v) {
                if (typeof v === 'string') return JSON.stringify(v);
                if (typeof v === 'bigint') return v + 'n';
                if (typeof v === 'symbol' || typeof v === 'function') return String(v);
                if (v instanceof Error) return v.name + ': ' + v.message;
                try {
                        var s = JSON.stringify(v, function (k, x) {
                                if (typeof x === 'bigint') return x + 'n';
                                if (ArrayBuffer.isView(x)) return Object.prototype.toString.call(x) + '[' + Array.from(new Uint8Array(x.buffer, x.byteOffset, x.byteLength)).join(',') + ']';
                                if (x instanceof Map) return ['Map', Array.from(x)];
                                if (x instanceof Set) return ['Set', Array.from(x)];
                                return x;
                        });
                        return s === undefined ? String(v) : s;
                } catch (e) {
                        return String(v);
                }
        }
        function report(name, err) {
                n++;
                if (err === undefined) {
                        passed++;
                        print('ok ' + n + ' - ' + name);
                } else {
                        failed++;
                        print('not ok ' + n + ' - ' + name + ': ' + (err instanceof Error || (err && err.name && err.message !== undefined) ? err.name + ': ' + err.message : fmt(err)));
                }
        }
        function AssertionError(msg) {
                var e = new Error(msg);
                e.name = 'AssertionError';
                return e;
        }
        function same(a, b) { return a === b || (a !== a && b !== b); }
        function deep(a, b, seen) {
                if (same(a, b)) return true;
                if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
                if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
                var tag = Object.prototype.toString.call(a);
                if (tag !== Object.prototype.toString.call(b)) return false;
                for (var i = 0; i < seen.length; i++) if (seen[i][0] === a && seen[i][1] === b) return true;
                seen.push([a, b]);
                if (a instanceof Date) return same(a.getTime(), b.getTime());
                if (a instanceof RegExp) return a.source === b.source && a.flags === b.flags;
                if (a instanceof ArrayBuffer) return deep(new Uint8Array(a), new Uint8Array(b), seen);
                if (a instanceof DataView) return a.byteLength === b.byteLength && deep(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), new Uint8Array(b.buffer, b.byteOffset, b.byteLength), seen);
                if (a instanceof Map || a instanceof Set) {
                        if (a.size !== b.size) return false;
                        return deep(Array.from(a), Array.from(b), seen);
                }
                if (typeof a.valueOf === 'function' && /^\[object (Number|String|Boolean|BigInt)\]$/.test(tag) && !same(a.valueOf(), b.valueOf())) return false;
                var ka = Object.keys(a), kb = Object.keys(b);
                if (ka.length !== kb.length) return false;
                for (i = 0; i < ka.length; i++) {
                        if (!Object.prototype.hasOwnProperty.call(b, ka[i])) return false;
                        if (!deep(a[ka[i]], b[ka[i]], seen)) return false;
                }
                return true;
        }
        var assert = {
                ok: function (v, msg) { if (!v) throw AssertionError(msg || 'expected truthy, got ' + fmt(v)); },
                equal: function (a, b, msg) { if (!same(a, b)) throw AssertionError((msg ? msg + ': ' : '') + 'expected ' + fmt(b) + ', got ' + fmt(a)); },
                notEqual: function (a, b, msg) { if (same(a, b)) throw AssertionError((msg ? msg + ': ' : '') + 'expected something other than ' + fmt(b)); },
                deepEqual: function (a, b, msg) { if (!deep(a, b, [])) throw AssertionError((msg ? msg + ': ' : '') + 'expected ' + fmt(b) + ', got ' + fmt(a)); },
                // expected: constructor (instanceof), string (error name), RegExp
                // (tested against the message) or an object whose own properties
                // must all equal the error's.
                throws: function (fn, expected, msg) {
                        var err, threw = false;
                        try { fn(); } catch (e) { threw = true; err = e; }
                        var pre = msg ? msg + ': ' : '';
                        if (!threw) throw AssertionError(pre + 'expected an exception');
                        if (expected === undefined) return err;
                        if (typeof expected === 'function') {
                                if (!(err instanceof expected)) throw AssertionError(pre + 'expected instance of ' + expected.name + ', got ' + fmt(err));
                        } else if (typeof expected === 'string') {
                                if (!err || err.name !== expected) throw AssertionError(pre + 'expected ' + expected + ', got ' + fmt(err));
                        } else if (expected instanceof RegExp) {
                                if (!expected.test(err && err.message)) throw AssertionError(pre + 'message ' + fmt(err && err.message) + ' does not match ' + expected);
                        } else {
                                Object.keys(expected).forEach(function (k) {
                                        if (!err || !same(err[k], expected[k])) throw AssertionError(pre + 'expected ' + k + ' ' + fmt(expected[k]) + ', got ' + fmt(err && err[k]) + ' (' + fmt(err) + ')');
                                });
                        }
                        return err;
                }
        };
        function test(name, fn) {
                var r;
                try {
                        r = fn();
                } catch (e) {
                        report(name, e === undefined ? 'undefined thrown' : e);
                        return;
                }
                if (r && typeof r.then === 'function') {
                        var token = { name: name };
                        pending.add(token);
                        r.then(function () { pending.delete(token); report(name); },
                                function (e) { pending.delete(token); report(name, e === undefined ? 'rejected with undefined' : e); });
                } else {
                        report(name);
                }
        }
        function done(loadErrors) {
                pending.forEach(function (t) { report(t.name, 'async test never settled'); });
                pending.clear();
                failed += loadErrors | 0;
                print('# js: ' + passed + ' passed, ' + failed + ' failed');
                return failed;
        }
        test.initialGlobals = initialGlobals;
        Object.defineProperty(G, 'test', { value: test, writable: true, configurable: true });
        Object.defineProperty(G, 'assert', { value: assert, writable: true, configurable: true });
        Object.defineProperty(G, '__jsrunDone', { value: done, writable: true, configurable: true });
})(globalThis);
