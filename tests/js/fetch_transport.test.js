// engine/fetch.js: fetch() against a fake host — the "http" call's args,
// the value's passthrough, binary bodies, errors, concurrency.
// Run: build/jsrun engine/fetch.js tests/js/fetch_*.test.js
(function () {
'use strict';
// The fake host records every call and answers by URL: routes[url](args)
// returns the value (or a promise for it, or throws); the default echoes the
// request body back.
var calls = [], routes = {};
var host = {
        call: function (op, args) {
                calls.push({ op: op, args: JSON.parse(JSON.stringify(args)) });
                var route = routes[args.url];
                if (route) return route(args);
                return Promise.resolve(ok(args, { body_base64: args.body_base64 || '' }));
        },
};
__chidoriInstallFetch(host);

function ok(args, extra) {
        var v = { status: 200, statusText: 'OK', url: args.url, redirected: false,
                headers: [['Content-Type', 'application/octet-stream']], body_base64: '' };
        for (var k in extra) v[k] = extra[k];
        return v;
}
function callFor(url) {
        for (var i = calls.length - 1; i >= 0; i--) if (calls[i].args.url === url) return calls[i];
        return null;
}
function deferred() {
        var d = {};
        d.promise = new Promise(function (res, rej) { d.resolve = res; d.reject = rej; });
        return d;
}
function rejectsWith(p, C, re) {
        return p.then(function (v) {
                throw new Error('expected a rejection, got ' + v);
        }, function (e) {
                assert.ok(e instanceof C, 'expected ' + C.name + ', got ' + (e && e.name) + ': ' + (e && e.message));
                if (re) assert.ok(re.test(e.message), 'message ' + JSON.stringify(e.message) + ' vs ' + re);
                return e;
        });
}
function byteString(u8) {
        var s = '';
        for (var i = 0; i < u8.length; i += 4096) s += String.fromCharCode.apply(null, u8.subarray(i, i + 4096));
        return s;
}
function sameBytes(a, b, what) {
        assert.equal(a.length, b.length, what + ' length');
        for (var i = 0; i < a.length; i++) if (a[i] !== b[i]) throw new Error(what + ': byte ' + i + ' differs: ' + a[i] + ' vs ' + b[i]);
}

/* ------------------------------------------------------------ the call */

test('GET: one "http" call, fragment stripped, no body_base64', function () {
        return fetch('https://t.test/get?x=1#frag').then(function (r) {
                var c = callFor('https://t.test/get?x=1');
                assert.ok(c, 'called');
                assert.equal(c.op, 'http');
                assert.deepEqual(c.args, { url: 'https://t.test/get?x=1', method: 'GET', headers: [], redirect: 'follow' });
                assert.equal('body_base64' in c.args, false);
                assert.equal(r.status, 200);
        });
});

test('POST string: method, headers in order, content-type default, base64 body', function () {
        return fetch('https://t.test/post', { method: 'post', body: 'h\u00e9', headers: { 'X-One': '1', Authorization: 'Bearer t' } }).then(function (r) {
                var a = callFor('https://t.test/post').args;
                assert.equal(a.method, 'POST');
                assert.deepEqual(a.headers, [['X-One', '1'], ['Authorization', 'Bearer t'], ['Content-Type', 'text/plain;charset=UTF-8']]);
                assert.equal(a.body_base64, 'aMOp');
                return r.text();
        }).then(function (t) { assert.equal(t, 'h\u00e9'); });
});

test('empty body is sent as ""; null body is omitted', function () {
        return Promise.all([
                fetch('https://t.test/empty', { method: 'POST', body: '' }),
                fetch('https://t.test/nobody', { method: 'POST', body: null }),
        ]).then(function () {
                assert.equal(callFor('https://t.test/empty').args.body_base64, '');
                assert.equal('body_base64' in callFor('https://t.test/nobody').args, false);
        });
});

test('URLSearchParams and JSON bodies', function () {
        return Promise.all([
                fetch('https://t.test/form', { method: 'POST', body: new URLSearchParams({ a: '1', b: 'x y' }) }),
                fetch('https://t.test/json', { method: 'PUT', body: JSON.stringify({ k: 1 }), headers: { 'content-type': 'application/json' } }),
        ]).then(function () {
                var f = callFor('https://t.test/form').args, j = callFor('https://t.test/json').args;
                assert.deepEqual(f.headers, [['Content-Type', 'application/x-www-form-urlencoded;charset=UTF-8']]);
                assert.equal(atob(f.body_base64), 'a=1&b=x+y');
                assert.deepEqual(j.headers, [['content-type', 'application/json']]);
                assert.equal(atob(j.body_base64), '{"k":1}');
        });
});

test('redirect mode and method pass through', function () {
        return Promise.all([
                fetch('https://t.test/manual', { redirect: 'manual' }),
                fetch('https://t.test/error', { redirect: 'error', method: 'DELETE' }),
                fetch('https://t.test/patch', { method: 'patch', body: 'p' }),
        ]).then(function () {
                assert.equal(callFor('https://t.test/manual').args.redirect, 'manual');
                assert.equal(callFor('https://t.test/error').args.redirect, 'error');
                assert.equal(callFor('https://t.test/error').args.method, 'DELETE');
                assert.equal(callFor('https://t.test/patch').args.method, 'patch');
        });
});

test('fetch(Request): uses its url, method, headers, body; marks it used', function () {
        var q = new Request('https://t.test/req', { method: 'POST', body: 'rb', headers: { 'X-R': 'r' } });
        return fetch(q).then(function (r) {
                var a = callFor('https://t.test/req').args;
                assert.equal(a.method, 'POST');
                assert.equal(atob(a.body_base64), 'rb');
                assert.deepEqual(a.headers[0], ['X-R', 'r']);
                assert.equal(q.bodyUsed, true);
                return rejectsWith(fetch(q), TypeError);
        });
});

test('fetch(Request, init) overrides', function () {
        var q = new Request('https://t.test/req2', { headers: { 'X-R': 'r' } });
        return fetch(q, { method: 'POST', body: 'x', headers: { 'X-I': 'i' } }).then(function () {
                var a = callFor('https://t.test/req2').args;
                assert.equal(a.method, 'POST');
                assert.deepEqual(a.headers, [['X-I', 'i'], ['Content-Type', 'text/plain;charset=UTF-8']]);
        });
});

/* ------------------------------------------------------------ the value */

test('status, statusText, url, redirected, headers pass through', function () {
        routes['https://t.test/redir'] = function (args) {
                return Promise.resolve(ok(args, {
                        status: 404, statusText: 'Not Found', url: 'https://t.test/final', redirected: true,
                        headers: [['Content-Type', 'text/plain'], ['Set-Cookie', 'a=1'], ['X-Dup', '1'], ['set-cookie', 'b=2'], ['x-dup', '2']],
                        body_base64: btoa('missing'),
                }));
        };
        return fetch('https://t.test/redir').then(function (r) {
                assert.equal(r.status, 404);
                assert.equal(r.ok, false);
                assert.equal(r.statusText, 'Not Found');
                assert.equal(r.url, 'https://t.test/final');
                assert.equal(r.redirected, true);
                assert.equal(r.type, 'basic');
                assert.equal(r.headers.get('x-dup'), '1, 2');
                assert.deepEqual(r.headers.getSetCookie(), ['a=1', 'b=2']);
                assert.deepEqual(Array.from(r.headers.keys()), ['content-type', 'set-cookie', 'set-cookie', 'x-dup']);
                return r.text();
        }).then(function (t) { assert.equal(t, 'missing'); });
});

test('a 3xx from redirect "manual" is an ordinary response', function () {
        routes['https://t.test/m'] = function (args) {
                return ok(args, { status: 302, statusText: 'Found', headers: [['Location', '/next']] });
        };
        return fetch('https://t.test/m', { redirect: 'manual' }).then(function (r) {
                assert.equal(r.status, 302);
                assert.equal(r.headers.get('location'), '/next');
                assert.equal(r.redirected, false);
        });
});

test('HEAD and null body statuses give a null body', function () {
        routes['https://t.test/204'] = function (args) { return ok(args, { status: 204, statusText: 'No Content' }); };
        return Promise.all([fetch('https://t.test/head', { method: 'HEAD' }), fetch('https://t.test/204'), fetch('https://t.test/200')]).then(function (r) {
                assert.equal(r[0].body, null);
                assert.equal(r[1].body, null);
                assert.equal(r[1].status, 204);
                assert.notEqual(r[2].body, null, 'an empty 200 body is still a body');
                return r[1].text();
        }).then(function (t) { assert.equal(t, ''); });
});

test('json() of a fetched response; bodyUsed; clone', function () {
        routes['https://t.test/j'] = function (args) {
                return ok(args, { headers: [['content-type', 'application/json']], body_base64: btoa('{"a":[1,"\u00e9"]}'.replace('\u00e9', '\u00c3\u00a9')) });
        };
        return fetch('https://t.test/j').then(function (r) {
                var c = r.clone();
                return Promise.all([r.json(), c.text()]).then(function (v) {
                        assert.deepEqual(v[0], { a: [1, '\u00e9'] });
                        assert.equal(v[1], '{"a":[1,"\u00e9"]}');
                        assert.equal(r.bodyUsed, true);
                        return rejectsWith(r.json(), TypeError);
                });
        });
});

/* ------------------------------------------------------------ binary */

test('all 256 byte values round-trip; base64 matches btoa', function () {
        var all = new Uint8Array(256);
        for (var i = 0; i < 256; i++) all[i] = i;
        return fetch('https://t.test/bin', { method: 'POST', body: all }).then(function (r) {
                assert.equal(callFor('https://t.test/bin').args.body_base64, btoa(byteString(all)));
                return r.bytes();
        }).then(function (b) { sameBytes(b, all, 'echo'); });
});

test('every length 0..17 and every tail: encoder and decoder agree with btoa', function () {
        var ps = [];
        for (var n = 0; n < 18; n++) {
                var u = new Uint8Array(n);
                for (var i = 0; i < n; i++) u[i] = (i * 97 + n * 31 + 255) & 255;
                (function (u, n) {
                        var url = 'https://t.test/len' + n;
                        ps.push(fetch(url, { method: 'POST', body: u }).then(function (r) {
                                assert.equal(callFor(url).args.body_base64, btoa(byteString(u)), 'length ' + n);
                                return r.arrayBuffer();
                        }).then(function (b) { sameBytes(new Uint8Array(b), u, 'length ' + n); }));
                })(u, n);
        }
        return Promise.all(ps);
});

test('unpadded base64 from the host decodes too', function () {
        routes['https://t.test/nopad'] = function (args) { return ok(args, { body_base64: 'YWI' }); };
        return fetch('https://t.test/nopad').then(function (r) { return r.text(); }).then(function (t) { assert.equal(t, 'ab'); });
});

test('a 1 MiB binary body round-trips', function () {
        var n = 1 << 20, u = new Uint8Array(n), x = 12345;
        for (var i = 0; i < n; i++) {
                x = (Math.imul(x, 1103515245) + 12345) >>> 0;
                u[i] = x >>> 24;
        }
        return fetch('https://t.test/big', { method: 'POST', body: u }).then(function (r) {
                var b64 = callFor('https://t.test/big').args.body_base64;
                assert.equal(b64.length, Math.ceil(n / 3) * 4);
                assert.equal(b64, btoa(byteString(u)), 'same as btoa');
                return r.bytes();
        }).then(function (b) { sameBytes(b, u, '1 MiB'); });
});

test('a 1 MiB text body round-trips as UTF-8', function () {
        var s = new Array((1 << 20) / 8 + 1).join('a\u00e9\u20ac\ud83d\ude00');
        return fetch('https://t.test/bigtext', { method: 'POST', body: s }).then(function (r) { return r.text(); }).then(function (t) {
                assert.equal(t.length, s.length);
                assert.ok(t === s, 'text equal');
        });
});

/* ------------------------------------------------------------ errors */

test('misuse rejects with TypeError before any host call', function () {
        return Promise.all([
                rejectsWith(fetch('/relative'), TypeError, /Failed to parse URL/),
                rejectsWith(fetch('https://t.test/misuse', { method: 'CONNECT' }), TypeError),
                rejectsWith(fetch('https://t.test/misuse', { method: 'TRACE' }), TypeError),
                rejectsWith(fetch('https://t.test/misuse', { method: 'bad method' }), TypeError),
                rejectsWith(fetch('https://t.test/misuse', { body: 'not with GET' }), TypeError, /GET\/HEAD/),
                rejectsWith(fetch('https://t.test/misuse', { method: 'HEAD', body: 'x' }), TypeError),
                rejectsWith(fetch('https://t.test/misuse', { headers: { 'X-Bad': 'a\r\nInjected: 1' } }), TypeError),
                rejectsWith(fetch('https://t.test/misuse', { headers: { 'bad name': '1' } }), TypeError),
                rejectsWith(fetch('https://t.test/misuse', { redirect: 'sometimes' }), TypeError),
                rejectsWith(fetch(), TypeError),
        ]).then(function () { assert.equal(callFor('https://t.test/misuse'), null, 'no host call'); });
});

test('fetch never throws synchronously', function () {
        var p = fetch('/relative');
        assert.ok(p instanceof Promise);
        return p.catch(function () {});
});

test('host errors become TypeError("fetch failed: ...") with cause', function () {
        var hostErr = new Error('http: destination 127.0.0.1 is not public (SSRF guard); allow it with --allow-host');
        hostErr.code = 'HTTP_E_SSRF';
        routes['http://127.0.0.1/'] = function () { return Promise.reject(hostErr); };
        return rejectsWith(fetch('http://127.0.0.1/'), TypeError).then(function (e) {
                assert.equal(e.message, 'fetch failed: http: destination 127.0.0.1 is not public (SSRF guard); allow it with --allow-host');
                assert.equal(e.cause, hostErr);
                assert.equal(e.cause.code, 'HTTP_E_SSRF');
                assert.equal(Object.getOwnPropertyDescriptor(e, 'cause').enumerable, false);
        });
});

test('a host call that throws synchronously is mapped the same way', function () {
        routes['https://t.test/throws'] = function () { throw new Error('frame too large'); };
        return rejectsWith(fetch('https://t.test/throws'), TypeError, /^fetch failed: frame too large$/).then(function (e) {
                assert.equal(e.cause.message, 'frame too large');
        });
});

test('a malformed host value is a TypeError', function () {
        routes['https://t.test/bad1'] = function () { return Promise.resolve(null); };
        routes['https://t.test/bad2'] = function (args) { return ok(args, { body_base64: '***' }); };
        routes['https://t.test/bad3'] = function (args) { return ok(args, { headers: [['a']] }); };
        return Promise.all([
                rejectsWith(fetch('https://t.test/bad1'), TypeError, /fetch failed/),
                rejectsWith(fetch('https://t.test/bad2'), TypeError, /base64/),
                rejectsWith(fetch('https://t.test/bad3'), TypeError, /header/),
        ]);
});

/* ------------------------------------------------------------ concurrency */

test('Promise.all of several fetches answered out of order', function () {
        var d = {};
        ['a', 'b', 'c', 'd'].forEach(function (k) {
                d[k] = deferred();
                routes['https://t.test/par/' + k] = function () { return d[k].promise; };
        });
        var all = Promise.all(['a', 'b', 'c', 'd'].map(function (k) {
                return fetch('https://t.test/par/' + k).then(function (r) { return r.text().then(function (t) { return [r.url, r.status, t]; }); });
        }));
        // Answer in the order d, b, a, c — and c after a few turns.
        ['d', 'b', 'a'].forEach(function (k, i) {
                d[k].resolve({ status: 200 + i, statusText: '', url: 'https://t.test/par/' + k, redirected: false, headers: [], body_base64: btoa('body ' + k) });
        });
        Promise.resolve().then(function () {}).then(function () {
                d.c.resolve({ status: 299, statusText: '', url: 'https://t.test/par/c', redirected: false, headers: [], body_base64: btoa('body c') });
        });
        return all.then(function (v) {
                assert.deepEqual(v, [
                        ['https://t.test/par/a', 202, 'body a'],
                        ['https://t.test/par/b', 201, 'body b'],
                        ['https://t.test/par/c', 299, 'body c'],
                        ['https://t.test/par/d', 200, 'body d'],
                ]);
        });
});

test('one failure among concurrent fetches', function () {
        var ok1 = deferred(), bad = deferred();
        routes['https://t.test/mix/ok'] = function () { return ok1.promise; };
        routes['https://t.test/mix/bad'] = function () { return bad.promise; };
        var p = Promise.allSettled([fetch('https://t.test/mix/ok'), fetch('https://t.test/mix/bad')]);
        bad.reject(new Error('http: t.test: Connection refused'));
        ok1.resolve({ status: 200, statusText: 'OK', url: 'https://t.test/mix/ok', redirected: false, headers: [], body_base64: '' });
        return p.then(function (s) {
                assert.equal(s[0].status, 'fulfilled');
                assert.equal(s[1].status, 'rejected');
                assert.equal(s[1].reason.message, 'fetch failed: http: t.test: Connection refused');
        });
});

/* ------------------------------------------------------------ data: URLs */

test('data: URLs are answered without a host call', function () {
        return Promise.all([
                fetch('data:text/plain;base64,aGVs bG8='),
                fetch('data:,a%20b%FF'),
                fetch('data:;charset=utf-8,x'),
                fetch('data:application/json,%7B%22a%22%3A1%7D'),
        ]).then(function (r) {
                assert.ok(calls.every(function (c) { return !/^data:/.test(c.args.url); }), 'no host call');
                assert.equal(r[0].headers.get('content-type'), 'text/plain');
                assert.equal(r[1].headers.get('content-type'), 'text/plain;charset=US-ASCII');
                assert.equal(r[2].headers.get('content-type'), 'text/plain;charset=utf-8');
                assert.equal(r[0].status, 200);
                assert.equal(r[0].url, 'data:text/plain;base64,aGVs bG8=');
                return Promise.all([r[0].text(), r[1].bytes(), r[3].json()]);
        }).then(function (v) {
                assert.equal(v[0], 'hello');
                assert.deepEqual(Array.from(v[1]), [97, 32, 98, 255]);
                assert.deepEqual(v[2], { a: 1 });
                return rejectsWith(fetch('data:;base64,%%%'), TypeError);
        });
});
})();
