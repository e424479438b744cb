// URLSearchParams. Expected values checked against Node 20.
function pairs(p) { return Array.from(p); }

test('parse from string, leading "?" stripped once', function () {
        assert.deepEqual(pairs(new URLSearchParams('a=1&b=2')), [['a', '1'], ['b', '2']]);
        assert.deepEqual(pairs(new URLSearchParams('?a=1')), [['a', '1']]);
        assert.deepEqual(pairs(new URLSearchParams('??a')), [['?a', '']]);
        assert.equal(new URLSearchParams('??a').toString(), '%3Fa=');
});

test('parse edge cases: empty pieces, missing "=", extra "="', function () {
        assert.deepEqual(pairs(new URLSearchParams('&&a=1&&')), [['a', '1']]);
        assert.deepEqual(pairs(new URLSearchParams('a')), [['a', '']]);
        assert.deepEqual(pairs(new URLSearchParams('=b')), [['', 'b']]);
        assert.deepEqual(pairs(new URLSearchParams('a=1=2')), [['a', '1=2']]);
        assert.equal(new URLSearchParams('').size, 0);
});

test('parse decodes "+" and percent escapes as UTF-8', function () {
        assert.deepEqual(pairs(new URLSearchParams('a+b=c+d')), [['a b', 'c d']]);
        assert.deepEqual(pairs(new URLSearchParams('x=%2B+%2b')), [['x', '+ +']]);
        assert.deepEqual(pairs(new URLSearchParams('%F0%9F%98%80=%C3%A9')), [['😀', 'é']]);
        assert.deepEqual(pairs(new URLSearchParams('é=ü')), [['é', 'ü']]);
});

test('parse keeps malformed escapes and replaces invalid UTF-8', function () {
        assert.deepEqual(pairs(new URLSearchParams('a%20b=%zz%4')), [['a b', '%zz%4']]);
        assert.deepEqual(pairs(new URLSearchParams('k=%ff%fe')), [['k', '\uFFFD\uFFFD']]);
        assert.deepEqual(pairs(new URLSearchParams('%E4%BD%A0%E5')), [['你\uFFFD', '']]);
});

test('construct from record', function () {
        var p = new URLSearchParams({ a: '1', 'b c': 'd&e', 'é': "~!*()'" });
        assert.equal(p.toString(), 'a=1&b+c=d%26e&%C3%A9=%7E%21*%28%29%27');
        assert.equal(new URLSearchParams({ n: 1, b: [1, 2] }).toString(), 'n=1&b=1%2C2');
});

test('construct from sequence of pairs and from another URLSearchParams', function () {
        var p = new URLSearchParams([['a', 1], ['a', 2], ['b', null]]);
        assert.equal(p.toString(), 'a=1&a=2&b=null');
        var q = new URLSearchParams(p);
        q.append('c', '3');
        assert.equal(q.toString(), 'a=1&a=2&b=null&c=3');
        assert.equal(p.toString(), 'a=1&a=2&b=null', 'copy is independent');
        assert.equal(new URLSearchParams(new Map([['m', 'v']])).toString(), 'm=v');
});

test('sequence items must be pairs', function () {
        assert.throws(function () { new URLSearchParams([['a']]); }, TypeError);
        assert.throws(function () { new URLSearchParams([['a', 'b', 'c']]); }, TypeError);
        assert.throws(function () { new URLSearchParams([1]); }, TypeError);
});

test('null and undefined init', function () {
        assert.equal(new URLSearchParams().toString(), '');
        assert.equal(new URLSearchParams(undefined).toString(), '');
        // WebIDL stringifies null (browsers give "null="; Node 20 gives "").
        assert.equal(new URLSearchParams(null).toString(), 'null=');
});

test('append / get / getAll / has', function () {
        var p = new URLSearchParams('a=1&b=2&a=3');
        p.append('a', 4);
        assert.equal(p.get('a'), '1');
        assert.equal(p.get('zz'), null);
        assert.deepEqual(p.getAll('a'), ['1', '3', '4']);
        assert.deepEqual(p.getAll('zz'), []);
        assert.equal(p.has('b'), true);
        assert.equal(p.has('a', '3'), true);
        assert.equal(p.has('a', '2'), false);
        assert.equal(p.has('zz'), false);
        assert.throws(function () { p.append('x'); }, TypeError);
        assert.throws(function () { p.get(); }, TypeError);
});

test('delete with and without value', function () {
        var p = new URLSearchParams('a=1&b=2&a=3');
        p.delete('a', '3');
        assert.equal(p.toString(), 'a=1&b=2');
        p.delete('a');
        assert.equal(p.toString(), 'b=2');
        p.delete('a', undefined);
        assert.equal(p.toString(), 'b=2');
});

test('set replaces the first and removes the rest', function () {
        var p = new URLSearchParams('a=1&b=2&a=3');
        p.set('a', 'x');
        assert.equal(p.toString(), 'a=x&b=2');
        p.set('c', 'y');
        assert.equal(p.toString(), 'a=x&b=2&c=y');
});

test('sort is stable and by UTF-16 code units', function () {
        var p = new URLSearchParams('z=1&a=2&\uD83D\uDE00=3&\uFFFD=4&a=1&Z=0');
        p.sort();
        assert.equal(p.toString(), 'Z=0&a=2&a=1&z=1&%F0%9F%98%80=3&%EF%BF%BD=4');
});

test('toString uses the application/x-www-form-urlencoded serializer', function () {
        assert.equal(new URLSearchParams({ q: 'a b+c', r: '\n*-._' }).toString(), 'q=a+b%2Bc&r=%0A*-._');
        assert.equal(new URLSearchParams({ k: '\u00e9&=%/?#' }).toString(), 'k=%C3%A9%26%3D%25%2F%3F%23');
});

test('lone surrogates become U+FFFD', function () {
        var p = new URLSearchParams('a=\uD800');
        assert.equal(p.get('a'), '\uFFFD');
        assert.equal(p.toString(), 'a=%EF%BF%BD');
        p.set('\uDC00', 'x');
        assert.equal(p.get('\uFFFD'), 'x');
});

test('iteration: entries, keys, values, Symbol.iterator, forEach', function () {
        var p = new URLSearchParams('a=1&b=2'), seen = [];
        assert.deepEqual(Array.from(p.keys()), ['a', 'b']);
        assert.deepEqual(Array.from(p.values()), ['1', '2']);
        assert.deepEqual(Array.from(p.entries()), [['a', '1'], ['b', '2']]);
        assert.equal(p[Symbol.iterator], p.entries);
        p.forEach(function (v, k, obj) { seen.push(k + v, obj === p, this.t); }, { t: 'T' });
        assert.deepEqual(seen, ['a1', true, 'T', 'b2', true, 'T']);
        assert.throws(function () { p.forEach(null); }, TypeError);
});

test('iterators are live and have a web-like prototype', function () {
        var p = new URLSearchParams('a=1'), it = p.keys();
        assert.equal(Object.prototype.toString.call(it), '[object URLSearchParams Iterator]');
        assert.equal(it[Symbol.iterator](), it, 'inherits %IteratorPrototype%');
        assert.deepEqual(it.next(), { value: 'a', done: false });
        p.append('b', '2');
        assert.deepEqual(it.next(), { value: 'b', done: false });
        assert.deepEqual(it.next(), { value: undefined, done: true });
});

test('size', function () {
        var p = new URLSearchParams('a=1&a=2&b=3');
        assert.equal(p.size, 3);
        p.delete('a');
        assert.equal(p.size, 1);
});

test('updates flow to the owning URL', function () {
        var u = new URL('http://h/?a=%20b+c');
        assert.equal(u.searchParams.get('a'), ' b c');
        u.searchParams.sort();
        assert.equal(u.search, '?a=+b+c', 'reserialised with the form serializer');
        u.searchParams.set('q', 'x y');
        assert.equal(u.href, 'http://h/?a=+b+c&q=x+y');
});

test('URLSearchParams has web-like shape', function () {
        assert.equal(Object.prototype.toString.call(new URLSearchParams()), '[object URLSearchParams]');
        assert.deepEqual(Object.keys(URLSearchParams.prototype), ['size', 'append', 'delete', 'get', 'getAll', 'has', 'set', 'sort', 'entries', 'forEach', 'keys', 'values', 'toString']);
        assert.throws(function () { URLSearchParams.prototype.get.call({}, 'a'); }, TypeError);
});
