// engine/fetch.js: AbortController / AbortSignal and aborting fetch().
// Run: build/jsrun engine/fetch.js tests/js/fetch_*.test.js
(function () {
'use strict';
// Start without AbortController/AbortSignal (another file may have installed
// them), as in the engine: the installer must add its own.
delete globalThis.AbortController;
delete globalThis.AbortSignal;

var calls = [], pending = {}, timers = [];
__chidoriInstallFetch({
        call: function (op, args) {
                calls.push(args.url);
                var d = {};
                d.promise = new Promise(function (res, rej) { d.resolve = res; d.reject = rej; });
                pending[args.url] = d;
                return d.promise;
        },
        setTimeout: function (fn, ms) { timers.push({ fn: fn, ms: ms }); return timers.length; },
});
test('AbortController and AbortSignal are installed when absent', function () {
        ['AbortController', 'AbortSignal'].forEach(function (n) {
                var d = Object.getOwnPropertyDescriptor(globalThis, n);
                assert.equal(typeof d.value, 'function', n);
                assert.deepEqual([d.writable, d.enumerable, d.configurable], [true, false, true], n);
        });
});

function answer(url, body) {
        pending[url].resolve({ status: 200, statusText: 'OK', url: url, redirected: false, headers: [], body_base64: btoa(body || '') });
}
function rejectsWith(p, check) {
        return p.then(function (v) {
                throw new Error('expected a rejection, got ' + v);
        }, function (e) {
                check(e);
                return e;
        });
}
function isAbortError(e) {
        assert.ok(e instanceof DOMException, 'a DOMException: ' + e);
        assert.equal(e.name, 'AbortError');
        assert.equal(e.code, 20);
}

/* ------------------------------------------------------------ AbortController */

test('AbortController / AbortSignal basics', function () {
        var c = new AbortController(), s = c.signal;
        assert.equal(c.signal, s);
        assert.equal(s.aborted, false);
        assert.equal(s.reason, undefined);
        s.throwIfAborted();
        c.abort();
        assert.equal(s.aborted, true);
        isAbortError(s.reason);
        assert.equal(s.reason.message, 'This operation was aborted');
        var r = s.reason;
        c.abort('again');
        assert.equal(s.reason, r, 'the first reason sticks');
        assert.throws(function () { s.throwIfAborted(); }, 'AbortError');
        assert.throws(function () { new AbortSignal(); }, TypeError);
        assert.equal(Object.prototype.toString.call(s), '[object AbortSignal]');
        assert.equal(Object.prototype.toString.call(c), '[object AbortController]');
});

test('abort event: listeners, onabort, once, remove, custom reason', function () {
        var c = new AbortController(), s = c.signal, seen = [];
        var l1 = function (ev) { seen.push('l1:' + ev.type + ':' + (ev.target === s)); };
        var l2 = function () { seen.push('l2'); };
        s.addEventListener('abort', l1);
        s.addEventListener('abort', l1);  // deduplicated
        s.addEventListener('abort', l2);
        s.removeEventListener('abort', l2);
        s.addEventListener('abort', { handleEvent: function () { seen.push('obj'); } }, { once: true });
        s.addEventListener('other', function () { seen.push('other'); });
        s.onabort = function () { seen.push('on:' + this.reason); };
        c.abort('because');
        assert.deepEqual(seen, ['on:because', 'l1:abort:true', 'obj']);
        assert.equal(s.reason, 'because');
});

test('a throwing listener does not stop the others or abort()', function () {
        var c = new AbortController(), seen = [];
        c.signal.addEventListener('abort', function () { throw new Error('listener bug'); });
        c.signal.addEventListener('abort', function () { seen.push('second'); });
        c.abort();
        assert.deepEqual(seen, ['second']);
});

test('AbortSignal.abort, AbortSignal.any', function () {
        var s = AbortSignal.abort();
        assert.equal(s.aborted, true);
        isAbortError(s.reason);
        assert.equal(AbortSignal.abort('r').reason, 'r');
        var a = new AbortController(), b = new AbortController();
        var any = AbortSignal.any([a.signal, b.signal]);
        assert.equal(any.aborted, false);
        b.abort('from b');
        assert.equal(any.aborted, true);
        assert.equal(any.reason, 'from b');
        a.abort('late');
        assert.equal(any.reason, 'from b');
        assert.equal(AbortSignal.any([AbortSignal.abort('pre')]).reason, 'pre');
        assert.equal(AbortSignal.any([]).aborted, false);
        assert.throws(function () { AbortSignal.any([{}]); }, TypeError);
});

test('AbortSignal.timeout uses the host timer', function () {
        var before = timers.length;
        var s = AbortSignal.timeout(1500);
        assert.equal(timers.length, before + 1);
        assert.equal(timers[before].ms, 1500);
        assert.equal(s.aborted, false);
        timers[before].fn();
        assert.equal(s.aborted, true);
        assert.equal(s.reason.name, 'TimeoutError');
        assert.throws(function () { AbortSignal.timeout(-1); }, TypeError);
});

/* ------------------------------------------------------------ fetch */

test('already aborted: rejects with AbortError, no host call', function () {
        var c = new AbortController();
        c.abort();
        return rejectsWith(fetch('https://a.test/pre', { signal: c.signal }), isAbortError).then(function () {
                assert.equal(calls.indexOf('https://a.test/pre'), -1, 'no host call');
        });
});

test('already aborted with a custom reason: rejects with that reason', function () {
        var reason = new Error('custom');
        return rejectsWith(fetch('https://a.test/pre2', { signal: AbortSignal.abort(reason) }), function (e) {
                assert.equal(e, reason);
        });
});

test('aborted Request signal is honoured by fetch(request)', function () {
        var c = new AbortController(), q = new Request('https://a.test/req', { signal: c.signal });
        c.abort();
        return rejectsWith(fetch(q), isAbortError);
});

test('abort after the call started: AbortError; the late answer is ignored', function () {
        var c = new AbortController();
        var p = fetch('https://a.test/during', { signal: c.signal });
        assert.equal(calls[calls.length - 1], 'https://a.test/during', 'the call went out');
        return Promise.resolve().then(function () {
                c.abort();
                answer('https://a.test/during', 'too late');
                return rejectsWith(p, isAbortError);
        });
});

test('abort while the host call is failing: still AbortError', function () {
        var c = new AbortController();
        var p = fetch('https://a.test/during2', { signal: c.signal });
        c.abort();
        pending['https://a.test/during2'].reject(new Error('http: request timed out after 60000 ms'));
        return rejectsWith(p, isAbortError);
});

test('abort after the response arrived changes nothing', function () {
        var c = new AbortController();
        var p = fetch('https://a.test/after', { signal: c.signal });
        answer('https://a.test/after', 'fine');
        return p.then(function (r) {
                c.abort();
                return r.text();
        }).then(function (t) { assert.equal(t, 'fine'); });
});

test('one signal aborts several fetches; the others complete', function () {
        var c = new AbortController();
        var a = fetch('https://a.test/s1', { signal: c.signal });
        var b = fetch('https://a.test/s2', { signal: c.signal });
        var other = fetch('https://a.test/s3');
        c.abort();
        answer('https://a.test/s3', 'ok');
        return Promise.allSettled([a, b, other]).then(function (s) {
                assert.deepEqual(s.map(function (x) { return x.status; }), ['rejected', 'rejected', 'fulfilled']);
                isAbortError(s[0].reason);
                isAbortError(s[1].reason);
        });
});

test('fetch removes its abort listener when it settles', function () {
        var c = new AbortController(), fired = 0;
        var add = c.signal.addEventListener, added = [];
        // Watch registrations through the public API.
        c.signal.addEventListener = function (t, l, o) { added.push(l); return add.call(this, t, l, o); };
        var p = fetch('https://a.test/cleanup', { signal: c.signal });
        answer('https://a.test/cleanup');
        return p.then(function () {
                assert.equal(added.length, 1);
                c.signal.addEventListener('abort', function () { fired++; });
                c.abort();
                assert.equal(fired, 1);
        });
});

test('AbortSignal.timeout aborts a pending fetch with TimeoutError', function () {
        var before = timers.length;
        var p = fetch('https://a.test/timeout', { signal: AbortSignal.timeout(10) });
        timers[before].fn();
        return rejectsWith(p, function (e) { assert.equal(e.name, 'TimeoutError'); });
});
})();
