// engine/fetch.js: installation and Headers.
// Run: build/jsrun engine/fetch.js tests/js/fetch_*.test.js
(function () {
'use strict';
var calls = [];
__chidoriInstallFetch({
        call: function (op, args) {
                calls.push({ op: op, args: args });
                return Promise.resolve({ status: 200, statusText: 'OK', url: args.url, redirected: false,
                        headers: [['X-Dup', 'a'], ['x-dup', 'b']], body_base64: '' });
        },
});

function entries(h) { return Array.from(h); }

test('installs globals as non-enumerable, writable, configurable', function () {
        ['Headers', 'Request', 'Response', 'fetch', 'AbortController', 'AbortSignal'].forEach(function (n) {
                var d = Object.getOwnPropertyDescriptor(globalThis, n);
                assert.ok(d, n + ' defined');
                assert.equal(typeof d.value, 'function', n);
                assert.deepEqual([d.writable, d.enumerable, d.configurable], [true, false, true], n);
        });
        var d = Object.getOwnPropertyDescriptor(globalThis, '__chidoriInstallFetch');
        assert.deepEqual([d.enumerable, d.configurable], [false, true]);
        assert.equal(fetch.name, 'fetch');
        assert.equal(fetch.length, 1);
        assert.equal(Request.length, 1);
        assert.equal(Response.length, 0);
});

test('no helper globals leak', function () {
        ['G', 'O', 'installFetch', 'bytesToBase64', 'base64ToBytes', 'B64', 'isToken', 'headerName', 'headerValue',
         'ReadableStream', 'HeadersIterator', 'GUARD_IMMUTABLE', 'define', 'apply', 'host', 'hostCall', 'OwnAbort',
         'makeAbort', 'buildRequest', 'consume'].forEach(function (n) {
                assert.equal(n in globalThis, false, n);
        });
});

test('installer refuses a host without call()', function () {
        assert.throws(function () { __chidoriInstallFetch({}); }, TypeError);
        assert.throws(function () { __chidoriInstallFetch(null); }, TypeError);
});

test('names are case-insensitive', function () {
        var h = new Headers({ 'Content-Type': 'text/html' });
        assert.equal(h.get('content-type'), 'text/html');
        assert.equal(h.get('CONTENT-TYPE'), 'text/html');
        assert.equal(h.has('Content-type'), true);
        assert.equal(h.has('x-missing'), false);
        assert.equal(h.get('x-missing'), null);
});

test('append combines duplicates with ", "', function () {
        var h = new Headers();
        h.append('Accept', 'a');
        h.append('accept', 'b');
        h.append('ACCEPT', 'c');
        assert.equal(h.get('accept'), 'a, b, c');
        assert.deepEqual(entries(h), [['accept', 'a, b, c']]);
});

test('set replaces every value; delete removes them', function () {
        var h = new Headers([['X-A', '1'], ['Y', 'y'], ['x-a', '2']]);
        h.set('x-A', '3');
        assert.equal(h.get('x-a'), '3');
        assert.deepEqual(entries(h), [['x-a', '3'], ['y', 'y']]);
        h.set('z', 'new');
        assert.equal(h.get('Z'), 'new');
        h.delete('X-A');
        assert.equal(h.has('x-a'), false);
        assert.deepEqual(entries(h), [['y', 'y'], ['z', 'new']]);
        h.delete('not-there');
        assert.equal(entries(h).length, 2);
});

test('iteration is sorted and lower-case; keys/values/entries', function () {
        var h = new Headers([['Zeta', '1'], ['alpha', '2'], ['Beta', '3'], ['ALPHA', '4']]);
        assert.deepEqual(Array.from(h.keys()), ['alpha', 'beta', 'zeta']);
        assert.deepEqual(Array.from(h.values()), ['2, 4', '3', '1']);
        assert.deepEqual(Array.from(h.entries()), [['alpha', '2, 4'], ['beta', '3'], ['zeta', '1']]);
        assert.equal(Headers.prototype[Symbol.iterator], Headers.prototype.entries);
});

test('set-cookie: getSetCookie, combined get, separate iteration', function () {
        var h = new Headers();
        h.append('Set-Cookie', 'a=1');
        h.append('X', 'x');
        h.append('set-cookie', 'b=2; Path=/');
        assert.deepEqual(h.getSetCookie(), ['a=1', 'b=2; Path=/']);
        assert.equal(h.get('set-cookie'), 'a=1, b=2; Path=/');
        assert.deepEqual(entries(h), [['set-cookie', 'a=1'], ['set-cookie', 'b=2; Path=/'], ['x', 'x']]);
        assert.deepEqual(new Headers().getSetCookie(), []);
});

test('init from object, array of pairs, Headers, Map', function () {
        var a = new Headers({ A: '1', b: 2 });
        assert.deepEqual(entries(a), [['a', '1'], ['b', '2']]);
        var b = new Headers([['A', '1'], ['a', '2']]);
        assert.equal(b.get('a'), '1, 2');
        var c = new Headers(b);
        c.append('c', '3');
        assert.deepEqual(entries(c), [['a', '1, 2'], ['c', '3']]);
        assert.equal(b.has('c'), false, 'copy is independent');
        var d = new Headers(new Map([['M', 'v']]));
        assert.equal(d.get('m'), 'v');
        assert.deepEqual(entries(new Headers()), []);
        assert.deepEqual(entries(new Headers(undefined)), []);
});

test('init errors', function () {
        assert.throws(function () { new Headers([['a']]); }, TypeError);
        assert.throws(function () { new Headers([['a', 'b', 'c']]); }, TypeError);
        assert.throws(function () { new Headers(['ab']); }, TypeError);
        assert.throws(function () { new Headers(null); }, TypeError);
        assert.throws(function () { new Headers('a: b'); }, TypeError);
        assert.throws(function () { new Headers({ 'bad name': 'x' }); }, TypeError);
        assert.throws(function () { new Headers({ [Symbol.iterator]: 5 }); }, TypeError);
});

test('invalid header names throw TypeError', function () {
        var h = new Headers();
        ['', 'a b', 'a:b', 'caf\u00e9', 'a\nb', '(x)', 'a/b', '\u2603'].forEach(function (n) {
                assert.throws(function () { h.append(n, 'v'); }, TypeError, JSON.stringify(n));
                assert.throws(function () { h.get(n); }, TypeError, JSON.stringify(n));
        });
        assert.throws(function () { h.set(Symbol('x'), 'v'); }, TypeError);
        h.append("!#$%&'*+-.^_`|~09azAZ", 'ok');
        assert.equal(h.get("!#$%&'*+-.^_`|~09azaz"), 'ok');
});

test('invalid header values throw TypeError; values are trimmed', function () {
        var h = new Headers();
        ['a\nb', 'a\rb', 'a\0b', '\u0100', 'x\r\nInjected: 1'].forEach(function (v) {
                assert.throws(function () { h.append('x', v); }, TypeError, JSON.stringify(v));
                assert.throws(function () { h.set('x', v); }, TypeError, JSON.stringify(v));
        });
        h.set('x', ' \t in  side \t\r\n');
        assert.equal(h.get('x'), 'in  side');
        h.set('y', '\u00ff\u0080');
        assert.equal(h.get('y'), '\u00ff\u0080', 'bytes 0x80..0xff are allowed');
        h.set('z', '');
        assert.equal(h.get('z'), '');
        assert.equal(h.has('z'), true);
});

test('forEach: sorted order, (value, name, headers), thisArg', function () {
        var h = new Headers({ B: '2', a: '1' }), seen = [], self = {};
        h.forEach(function (v, k, o) {
                assert.equal(o, h);
                assert.equal(this, self);
                seen.push(k + '=' + v);
        }, self);
        assert.deepEqual(seen, ['a=1', 'b=2']);
        assert.throws(function () { h.forEach(); }, TypeError);
});

test('missing arguments and wrong receivers throw TypeError', function () {
        var h = new Headers();
        assert.throws(function () { h.get(); }, TypeError);
        assert.throws(function () { h.append('a'); }, TypeError);
        assert.throws(function () { h.set('a'); }, TypeError);
        assert.throws(function () { Headers.prototype.get.call({}, 'a'); }, TypeError);
        assert.throws(function () { Headers.prototype.append.call(new Map(), 'a', 'b'); }, TypeError);
});

test('web shape: toStringTag, enumerable methods, iterator prototype', function () {
        var h = new Headers({ a: '1' });
        assert.equal(Object.prototype.toString.call(h), '[object Headers]');
        assert.equal(Object.getOwnPropertyDescriptor(Headers.prototype, 'append').enumerable, true);
        var it = h.keys();
        assert.equal(Object.prototype.toString.call(it), '[object Headers Iterator]');
        assert.equal(it[Symbol.iterator](), it);
        assert.deepEqual(it.next(), { value: 'a', done: false });
        assert.deepEqual(it.next(), { value: undefined, done: true });
        assert.equal(Object.keys(h).length, 0);
});

test('an iterator sees changes made while iterating', function () {
        var h = new Headers({ a: '1', c: '3' }), it = h.keys();
        assert.equal(it.next().value, 'a');
        h.append('b', '2');
        assert.equal(it.next().value, 'b');
        assert.equal(it.next().value, 'c');
        assert.equal(it.next().done, true);
});

test('fetched response headers are immutable, duplicates kept', function () {
        return fetch('https://h.test/immutable').then(function (r) {
                assert.equal(r.headers.get('x-dup'), 'a, b');
                assert.throws(function () { r.headers.append('x', '1'); }, /immutable/);
                assert.throws(function () { r.headers.set('x', '1'); }, TypeError);
                assert.throws(function () { r.headers.delete('x-dup'); }, TypeError);
                assert.equal(r.headers.get('x-dup'), 'a, b');
                var c = r.clone();
                assert.throws(function () { c.headers.append('x', '1'); }, TypeError, 'clone keeps the guard');
        });
});

test('request header names keep their case on the wire', function () {
        var before = calls.length;
        return fetch('https://h.test/case', { headers: [['X-Mixed-Case', 'v'], ['accept', 'a'], ['Accept', 'b']] }).then(function () {
                assert.deepEqual(calls[before].args.headers, [['X-Mixed-Case', 'v'], ['accept', 'a'], ['Accept', 'b']]);
        });
});
})();
