// engine/fetch.js: Request, Response and the body mixin (no host calls).
// Run: build/jsrun engine/fetch.js tests/js/fetch_*.test.js
(function () {
'use strict';
__chidoriInstallFetch({ call: function () { return Promise.reject(new Error('no network in this file')); } });

function rejectsWith(p, C, re) {
        return p.then(function (v) {
                throw new Error('expected a rejection, got ' + v);
        }, function (e) {
                assert.ok(e instanceof C, 'expected ' + C.name + ', got ' + (e && e.name) + ': ' + (e && e.message));
                if (re) assert.ok(re.test(e.message), 'message ' + JSON.stringify(e.message) + ' vs ' + re);
                return e;
        });
}

/* ------------------------------------------------------------ Response */

test('Response defaults', function () {
        var r = new Response();
        assert.equal(r.status, 200);
        assert.equal(r.ok, true);
        assert.equal(r.statusText, '');
        assert.equal(r.type, 'default');
        assert.equal(r.url, '');
        assert.equal(r.redirected, false);
        assert.equal(r.body, null);
        assert.equal(r.bodyUsed, false);
        assert.deepEqual(Array.from(r.headers), []);
        assert.equal(Object.prototype.toString.call(r), '[object Response]');
});

test('Response init: status, statusText, headers', function () {
        var r = new Response('x', { status: 404, statusText: 'Not Found', headers: { 'X-A': '1' } });
        assert.equal(r.status, 404);
        assert.equal(r.ok, false);
        assert.equal(r.statusText, 'Not Found');
        assert.equal(r.headers.get('x-a'), '1');
        assert.equal(new Response(null, { status: 299 }).ok, true);
        assert.equal(new Response(null, { status: 300 }).ok, false);
        r.headers.append('x-b', '2');
        assert.equal(r.headers.get('x-b'), '2', 'constructed response headers are mutable');
});

test('Response status outside 200..599 is a RangeError', function () {
        [0, 100, 199, 600, 999, 65536 + 100].forEach(function (s) {
                assert.throws(function () { new Response(null, { status: s }); }, RangeError, String(s));
        });
        assert.equal(new Response(null, { status: 599 }).status, 599);
        assert.equal(new Response(null, { status: 200.7 }).status, 200);
});

test('Response: bad statusText, body with a null body status', function () {
        assert.throws(function () { new Response(null, { statusText: 'a\nb' }); }, TypeError);
        assert.throws(function () { new Response(null, { statusText: '\u0100' }); }, TypeError);
        [204, 205, 304].forEach(function (s) {
                assert.throws(function () { new Response('x', { status: s }); }, TypeError, String(s));
                assert.equal(new Response(null, { status: s }).status, s);
        });
        assert.throws(function () { new Response('x', 5); }, TypeError);
});

test('string body: UTF-8, default content-type', function () {
        var r = new Response('h\u00e9llo \u2603 \ud83d\ude00');
        assert.equal(r.headers.get('content-type'), 'text/plain;charset=UTF-8');
        return r.bytes().then(function (b) {
                assert.ok(b instanceof Uint8Array);
                assert.deepEqual(Array.from(b.subarray(0, 3)), [0x68, 0xc3, 0xa9]);
                assert.equal(b.length, 1 + 2 + 3 + 1 + 3 + 1 + 4);
        });
});

test('an explicit content-type is kept', function () {
        var r = new Response('{}', { headers: { 'Content-Type': 'application/json' } });
        assert.equal(r.headers.get('content-type'), 'application/json');
        var q = new Request('https://x.test/', { method: 'POST', body: 'a', headers: [['content-type', 'text/csv']] });
        assert.equal(q.headers.get('Content-Type'), 'text/csv');
});

test('text() round-trips and decodes UTF-8 with replacement, BOM dropped', function () {
        return Promise.all([
                new Response('caf\u00e9 \ud83d\ude00').text(),
                new Response(new Uint8Array([0xef, 0xbb, 0xbf, 0x61, 0xff, 0x62])).text(),
        ]).then(function (t) {
                assert.equal(t[0], 'caf\u00e9 \ud83d\ude00');
                assert.equal(t[1], 'a\ufffdb');
        });
});

test('ArrayBufferView bodies are copied at construction', function () {
        var u = new Uint8Array([1, 2, 3]);
        var r = new Response(u);
        u[0] = 99;
        assert.equal(r.headers.get('content-type'), null, 'no default type for bytes');
        return r.bytes().then(function (b) { assert.deepEqual(Array.from(b), [1, 2, 3]); });
});

test('ArrayBuffer, DataView and offset views', function () {
        var buf = new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7]).buffer;
        var parts = [
                new Response(buf).bytes(),
                new Response(new DataView(buf, 2, 3)).bytes(),
                new Response(new Uint8Array(buf, 5)).bytes(),
                new Response(new Uint16Array(buf, 2, 1)).bytes(),
                new Response(new ArrayBuffer(0)).bytes(),
        ];
        new Uint8Array(buf)[0] = 42;  // after construction: no effect
        return Promise.all(parts).then(function (b) {
                assert.deepEqual(Array.from(b[0]), [0, 1, 2, 3, 4, 5, 6, 7]);
                assert.deepEqual(Array.from(b[1]), [2, 3, 4]);
                assert.deepEqual(Array.from(b[2]), [5, 6, 7]);
                assert.deepEqual(Array.from(b[3]), [2, 3]);
                assert.deepEqual(Array.from(b[4]), []);
        });
});

test('URLSearchParams body: form content-type', function () {
        var r = new Response(new URLSearchParams({ q: 'a b', x: '\u00e9' }));
        assert.equal(r.headers.get('content-type'), 'application/x-www-form-urlencoded;charset=UTF-8');
        return r.text().then(function (t) { assert.equal(t, 'q=a+b&x=%C3%A9'); });
});

test('null/undefined bodies; other values become String(body)', function () {
        assert.equal(new Response(null).body, null);
        assert.equal(new Response(undefined).body, null);
        var n = new Response(42), o = new Response({ a: 1 });
        assert.equal(n.headers.get('content-type'), 'text/plain;charset=UTF-8');
        return Promise.all([n.text(), o.text(), new Response(null).text()]).then(function (t) {
                assert.deepEqual(t, ['42', '[object Object]', '']);
        });
});

test('json(), arrayBuffer(), bytes()', function () {
        return Promise.all([
                new Response('{"a":[1,2,{"b":null}]}').json(),
                new Response('abc').arrayBuffer(),
                new Response('abc').bytes(),
        ]).then(function (v) {
                assert.deepEqual(v[0], { a: [1, 2, { b: null }] });
                assert.ok(v[1] instanceof ArrayBuffer);
                assert.deepEqual(Array.from(new Uint8Array(v[1])), [97, 98, 99]);
                assert.ok(v[2] instanceof Uint8Array);
                assert.deepEqual(Array.from(v[2]), [97, 98, 99]);
        });
});

test('json() of invalid JSON rejects with SyntaxError', function () {
        return rejectsWith(new Response('{nope').json(), SyntaxError);
});

test('blob() and formData() reject (not available)', function () {
        return Promise.all([
                typeof Blob === 'function' ? Promise.resolve() : rejectsWith(new Response('x').blob(), TypeError),
                rejectsWith(new Response('x').formData(), TypeError),
        ]);
});

test('bodyUsed: set at once; a second read rejects with TypeError', function () {
        var r = new Response('once');
        var p = r.text();
        assert.equal(r.bodyUsed, true);
        return p.then(function (t) {
                assert.equal(t, 'once');
                return Promise.all([
                        rejectsWith(r.text(), TypeError, /already been read/),
                        rejectsWith(r.json(), TypeError),
                        rejectsWith(r.arrayBuffer(), TypeError),
                        rejectsWith(r.bytes(), TypeError),
                ]);
        });
});

test('a null body can be read many times and is never used', function () {
        var r = new Response(null);
        return r.text().then(function (t) {
                assert.equal(t, '');
                assert.equal(r.bodyUsed, false);
                return r.arrayBuffer();
        }).then(function (b) { assert.equal(b.byteLength, 0); });
});

test('body methods on a foreign receiver reject', function () {
        return rejectsWith(Response.prototype.text.call({}), TypeError);
});

test('Response.clone: independent bodies and headers', function () {
        var r = new Response('data', { status: 201, statusText: 'Made', headers: { 'X-A': '1' } });
        var c = r.clone();
        assert.equal(c.status, 201);
        assert.equal(c.statusText, 'Made');
        c.headers.set('x-a', '2');
        assert.equal(r.headers.get('x-a'), '1');
        return r.text().then(function (t) {
                assert.equal(t, 'data');
                assert.equal(c.bodyUsed, false);
                assert.throws(function () { r.clone(); }, TypeError);
                return c.text();
        }).then(function (t) { assert.equal(t, 'data'); });
});

test('Response.json', function () {
        var r = Response.json({ ok: true, n: [1] }, { status: 202, headers: { 'X-A': 'a' } });
        assert.equal(r.status, 202);
        assert.equal(r.headers.get('content-type'), 'application/json');
        assert.equal(r.headers.get('x-a'), 'a');
        var t = Response.json('x', { headers: { 'content-type': 'application/vnd.api+json' } });
        assert.equal(t.headers.get('content-type'), 'application/vnd.api+json');
        assert.throws(function () { Response.json(undefined); }, TypeError);
        assert.throws(function () { Response.json(function () {}); }, TypeError);
        assert.throws(function () { Response.json(1n); }, TypeError);
        assert.throws(function () { Response.json({}, { status: 204 }); }, TypeError);
        return r.json().then(function (v) { assert.deepEqual(v, { ok: true, n: [1] }); });
});

test('Response.error', function () {
        var r = Response.error();
        assert.equal(r.type, 'error');
        assert.equal(r.status, 0);
        assert.equal(r.ok, false);
        assert.equal(r.body, null);
        assert.throws(function () { r.headers.set('a', 'b'); }, TypeError);
});

test('Response.redirect', function () {
        var r = Response.redirect('https://example.com/a b');
        assert.equal(r.status, 302);
        assert.equal(r.headers.get('location'), 'https://example.com/a%20b');
        assert.equal(r.body, null);
        assert.throws(function () { r.headers.set('a', 'b'); }, TypeError);
        assert.equal(Response.redirect('https://example.com/', 307).status, 307);
        [200, 300, 304, 399].forEach(function (s) {
                assert.throws(function () { Response.redirect('https://example.com/', s); }, RangeError, String(s));
        });
        assert.throws(function () { Response.redirect('/relative'); }, TypeError);
});

/* ------------------------------------------------------------ body streams */

test('body is a one-chunk stream: getReader().read()', function () {
        var r = new Response('abc');
        var s = r.body;
        assert.equal(r.body, s, 'same object every time');
        assert.equal(Object.prototype.toString.call(s), '[object ReadableStream]');
        assert.equal(s.locked, false);
        var reader = s.getReader();
        assert.equal(s.locked, true);
        assert.throws(function () { s.getReader(); }, TypeError);
        return rejectsWith(r.text(), TypeError, /locked/).then(function () {
                return reader.read();
        }).then(function (x) {
                assert.equal(x.done, false);
                assert.deepEqual(Array.from(x.value), [97, 98, 99]);
                assert.equal(r.bodyUsed, true);
                return reader.read();
        }).then(function (x) {
                assert.deepEqual(x, { value: undefined, done: true });
                return reader.closed;
        }).then(function () {
                reader.releaseLock();
                assert.equal(s.locked, false);
                return rejectsWith(r.text(), TypeError);
        });
});

test('for await over body; new Response(other.body)', function () {
        var chunks = [];
        var src = new Response('stream me');
        var moved = new Response(src.body);
        assert.equal(src.bodyUsed, true, 'the source is disturbed');
        assert.throws(function () { new Response(src.body); }, TypeError);
        return (async function () {
                for await (var c of moved.body) chunks.push(new TextDecoder().decode(c));
                assert.deepEqual(chunks, ['stream me']);
                assert.equal(moved.bodyUsed, true);
                assert.equal(moved.body.locked, false);
                var empty = [];
                for await (var d of new Response('').body) empty.push(d);
                assert.deepEqual(empty, []);
        })();
});

/* ------------------------------------------------------------ Request */

test('Request defaults', function () {
        var q = new Request('https://example.com/p?q=1#f');
        assert.equal(q.url, 'https://example.com/p?q=1#f');
        assert.equal(q.method, 'GET');
        assert.equal(q.redirect, 'follow');
        assert.equal(q.mode, 'cors');
        assert.equal(q.credentials, 'same-origin');
        assert.equal(q.cache, 'default');
        assert.equal(q.referrer, 'about:client');
        assert.equal(q.integrity, '');
        assert.equal(q.keepalive, false);
        assert.equal(q.destination, '');
        assert.equal(q.body, null);
        assert.equal(q.bodyUsed, false);
        assert.equal(q.signal.aborted, false);
        assert.ok(q.signal instanceof AbortSignal);
        assert.equal(Object.prototype.toString.call(q), '[object Request]');
});

test('Request URL is parsed and normalized; relative URLs and credentials throw', function () {
        assert.equal(new Request('HTTPS://Example.COM:443/a/../b c').url, 'https://example.com/b%20c');
        assert.equal(new Request(new URL('http://x.test/y')).url, 'http://x.test/y');
        assert.throws(function () { new Request('/relative'); }, TypeError);
        assert.throws(function () { new Request('relative/path'); }, /Failed to parse URL/);
        assert.throws(function () { new Request('https://user:pw@example.com/'); }, TypeError);
        assert.throws(function () { new Request(); }, TypeError);
});

test('methods: normalized, forbidden, invalid', function () {
        var m = function (x) { return new Request('https://x.test/', { method: x }).method; };
        assert.equal(m('get'), 'GET');
        assert.equal(m('Post'), 'POST');
        assert.equal(m('delete'), 'DELETE');
        assert.equal(m('options'), 'OPTIONS');
        assert.equal(m('put'), 'PUT');
        assert.equal(m('head'), 'HEAD');
        assert.equal(m('patch'), 'patch', 'patch is not normalized (as in the spec)');
        assert.equal(m('PROPFIND'), 'PROPFIND');
        ['CONNECT', 'connect', 'TRACE', 'trace', 'TRACK', 'Track'].forEach(function (x) {
                assert.throws(function () { m(x); }, /unsupported/, x);
        });
        ['', 'G ET', 'GET\n', 'G\u00c9T', '(x)'].forEach(function (x) {
                assert.throws(function () { m(x); }, TypeError, JSON.stringify(x));
        });
});

test('GET and HEAD requests cannot have a body', function () {
        assert.throws(function () { new Request('https://x.test/', { body: 'a' }); }, TypeError);
        assert.throws(function () { new Request('https://x.test/', { method: 'head', body: 'a' }); }, /GET\/HEAD/);
        assert.equal(new Request('https://x.test/', { body: null }).body, null);
        var q = new Request('https://x.test/', { method: 'POST', body: 'a' });
        assert.throws(function () { new Request(q, { method: 'GET' }); }, TypeError, 'inherited body');
});

test('redirect and other enums are checked', function () {
        assert.equal(new Request('https://x.test/', { redirect: 'manual' }).redirect, 'manual');
        assert.equal(new Request('https://x.test/', { redirect: 'error' }).redirect, 'error');
        assert.throws(function () { new Request('https://x.test/', { redirect: 'nope' }); }, TypeError);
        assert.throws(function () { new Request('https://x.test/', { mode: 'navigate' }); }, TypeError);
        assert.throws(function () { new Request('https://x.test/', { credentials: 'x' }); }, TypeError);
        assert.throws(function () { new Request('https://x.test/', { signal: {} }); }, TypeError);
        assert.throws(function () { new Request('https://x.test/', { headers: { 'a b': '1' } }); }, TypeError);
        assert.throws(function () { new Request('https://x.test/', 'init'); }, TypeError);
});

test('Request body types and content-type defaults', function () {
        var a = new Request('https://x.test/', { method: 'POST', body: 'text' });
        var b = new Request('https://x.test/', { method: 'POST', body: new URLSearchParams('a=1') });
        var c = new Request('https://x.test/', { method: 'PUT', body: new Uint8Array([1]) });
        assert.equal(a.headers.get('content-type'), 'text/plain;charset=UTF-8');
        assert.equal(b.headers.get('content-type'), 'application/x-www-form-urlencoded;charset=UTF-8');
        assert.equal(c.headers.get('content-type'), null);
        return Promise.all([a.text(), b.text(), c.bytes()]).then(function (v) {
                assert.deepEqual([v[0], v[1], Array.from(v[2])], ['text', 'a=1', [1]]);
                assert.equal(a.bodyUsed, true);
        });
});

test('Request from a Request: copies, overrides, takes the body', function () {
        var ac = new AbortController();
        var q = new Request('https://x.test/a', { method: 'POST', body: 'payload', headers: { 'X-A': '1' }, redirect: 'manual', signal: ac.signal });
        var r = new Request(q, { headers: { 'X-B': '2' } });
        assert.equal(r.url, 'https://x.test/a');
        assert.equal(r.method, 'POST');
        assert.equal(r.redirect, 'manual');
        assert.equal(r.headers.get('x-a'), null, 'init.headers replaces');
        assert.equal(r.headers.get('x-b'), '2');
        assert.equal(q.bodyUsed, true, 'the input body moved');
        assert.throws(function () { new Request(q); }, /already been used/);
        var s = new Request(new Request('https://x.test/', { headers: { 'X-C': '3' } }));
        assert.equal(s.headers.get('x-c'), '3');
        ac.abort();
        assert.equal(r.signal.aborted, true, 'follows the input signal');
        return r.text().then(function (t) { assert.equal(t, 'payload'); });
});

test('Request.clone', function () {
        var q = new Request('https://x.test/', { method: 'POST', body: 'b', headers: { a: '1' } });
        var c = q.clone();
        assert.equal(c.url, q.url);
        assert.equal(c.method, 'POST');
        c.headers.set('a', '2');
        assert.equal(q.headers.get('a'), '1');
        return Promise.all([q.text(), c.text()]).then(function (t) {
                assert.deepEqual(t, ['b', 'b']);
                assert.throws(function () { q.clone(); }, TypeError);
        });
});

test('Request.signal follows init.signal', function () {
        var ac = new AbortController();
        var q = new Request('https://x.test/', { signal: ac.signal });
        assert.notEqual(q.signal, ac.signal);
        assert.equal(q.signal, q.signal);
        assert.equal(q.signal.aborted, false);
        ac.abort('why');
        assert.equal(q.signal.aborted, true);
        assert.equal(q.signal.reason, 'why');
        assert.equal(new Request('https://x.test/', { signal: AbortSignal.abort() }).signal.aborted, true);
});
})();
