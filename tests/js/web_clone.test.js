// structuredClone. Expected behaviour checked against Node 20 (except where
// noted: Node clones URL objects as {} instead of throwing).
function dataCloneError(fn) {
        var e = assert.throws(fn, { name: 'DataCloneError', code: 25 });
        assert.ok(e instanceof DOMException, 'DOMException');
}

test('primitives are returned as is', function () {
        [undefined, null, true, 0, -0, NaN, 1.5, 'str', 10n].forEach(function (v) {
                assert.ok(Object.is(structuredClone(v), v), String(v));
        });
});

test('symbols cannot be cloned', function () {
        dataCloneError(function () { structuredClone(Symbol('s')); });
        dataCloneError(function () { structuredClone({ s: Symbol() }); });
});

test('primitive wrapper objects', function () {
        var b = structuredClone(Object(false)), n = structuredClone(Object(42)), s = structuredClone(Object('x')), g = structuredClone(Object(5n));
        assert.equal(typeof b, 'object');
        assert.equal(b.valueOf(), false);
        assert.equal(n.valueOf(), 42);
        assert.equal(s.valueOf(), 'x');
        assert.equal(g.valueOf(), 5n);
        assert.equal(Object.prototype.toString.call(g), '[object BigInt]');
});

test('Date', function () {
        var d = new Date(1700000000123), c = structuredClone(d);
        assert.ok(c instanceof Date);
        assert.notEqual(c, d);
        assert.equal(c.getTime(), d.getTime());
        assert.ok(isNaN(structuredClone(new Date(NaN)).getTime()));
});

test('RegExp keeps source and flags but not lastIndex', function () {
        var r = /a+b/gimsuy;
        r.lastIndex = 3;
        var c = structuredClone(r);
        assert.ok(c instanceof RegExp);
        assert.equal(c.source, 'a+b');
        assert.equal(c.flags, r.flags);
        assert.equal(c.lastIndex, 0);
        assert.equal(structuredClone(/x/d).hasIndices, true);
});

test('plain objects: own enumerable string keys only, prototype dropped', function () {
        var proto = { inherited: 1 }, o = Object.create(proto), s = Symbol('k');
        o.a = 1;
        o[s] = 2;
        Object.defineProperty(o, 'hidden', { value: 3, enumerable: false });
        var c = structuredClone(o);
        assert.deepEqual(Object.keys(c), ['a']);
        assert.equal(Object.getPrototypeOf(c), Object.prototype);
        assert.equal(c.inherited, undefined);
        assert.equal(c[s], undefined);
});

test('getters are invoked and their values copied', function () {
        var c = structuredClone({ get x() { return 5; } });
        assert.deepEqual(Object.getOwnPropertyDescriptor(c, 'x'), { value: 5, writable: true, enumerable: true, configurable: true });
});

test('class instances become plain objects', function () {
        function K() { this.a = 1; }
        K.prototype.m = function () {};
        var c = structuredClone(new K());
        assert.deepEqual(c, { a: 1 });
        assert.equal(c.m, undefined);
});

test('__proto__ as an own key is copied as data, not as prototype', function () {
        var o = JSON.parse('{"__proto__": {"x": 1}}'), c = structuredClone(o);
        assert.equal(Object.getPrototypeOf(c), Object.prototype);
        assert.ok(Object.prototype.hasOwnProperty.call(c, '__proto__'));
        assert.equal(c.x, undefined);
});

test('arrays keep holes, length and extra properties', function () {
        var a = [1, , 3];
        a.length = 5;
        a.foo = 'bar';
        var c = structuredClone(a);
        assert.ok(Array.isArray(c));
        assert.equal(c.length, 5);
        assert.equal(1 in c, false);
        assert.equal(c[2], 3);
        assert.equal(c.foo, 'bar');
});

test('Map and Set with object keys', function () {
        var k = { k: 1 }, m = new Map([[k, 'v'], ['s', k]]), s = new Set([k, 1, 'x']);
        var c = structuredClone({ m: m, s: s });
        assert.ok(c.m instanceof Map);
        assert.ok(c.s instanceof Set);
        var ck = Array.from(c.m.keys())[0];
        assert.deepEqual(ck, { k: 1 });
        assert.notEqual(ck, k);
        assert.equal(c.m.get('s'), ck, 'shared reference preserved inside the Map');
        assert.ok(c.s.has(ck));
        assert.deepEqual(Array.from(c.s).slice(1), [1, 'x']);
});

test('cycles and shared references are preserved', function () {
        var o = { name: 'root' }, shared = { s: 1 };
        o.self = o;
        o.a = shared;
        o.b = [shared, o];
        var c = structuredClone(o);
        assert.notEqual(c, o);
        assert.equal(c.self, c);
        assert.equal(c.a, c.b[0]);
        assert.equal(c.b[1], c);
        var m = new Map();
        m.set('me', m);
        var cm = structuredClone(m);
        assert.equal(cm.get('me'), cm);
});

test('ArrayBuffer is copied', function () {
        var b = new Uint8Array([1, 2, 3]).buffer, c = structuredClone(b);
        assert.ok(c instanceof ArrayBuffer);
        assert.notEqual(c, b);
        assert.deepEqual(Array.from(new Uint8Array(c)), [1, 2, 3]);
        new Uint8Array(b)[0] = 9;
        assert.equal(new Uint8Array(c)[0], 1);
});

test('typed arrays of every kind keep type, offset and length', function () {
        var buf = new ArrayBuffer(64);
        ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array',
         'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'].forEach(function (name) {
                var T = globalThis[name], v = new T(buf, 8, 2), c = structuredClone(v);
                assert.ok(c instanceof T, name);
                assert.equal(c.byteOffset, 8, name);
                assert.equal(c.length, 2, name);
                assert.equal(c.buffer.byteLength, 64, name + ' whole buffer is cloned');
        });
});

test('views sharing one buffer still share the cloned buffer', function () {
        var ab = new ArrayBuffer(8), v1 = new Uint8Array(ab, 2, 4), v2 = new DataView(ab);
        var c = structuredClone([v1, v2, ab]);
        assert.equal(c[0].buffer, c[1].buffer);
        assert.equal(c[0].buffer, c[2]);
        assert.notEqual(c[2], ab);
        assert.deepEqual([c[0].byteOffset, c[0].length, c[1].byteLength], [2, 4, 8]);
        c[1].setUint8(2, 7);
        assert.equal(c[0][0], 7);
        assert.equal(v1[0], 0);
});

test('DataView with offset', function () {
        var dv = new DataView(new ArrayBuffer(16), 4, 8), c = structuredClone(dv);
        assert.ok(c instanceof DataView);
        assert.deepEqual([c.byteOffset, c.byteLength], [4, 8]);
});

test('Error types keep name, message, stack and cause', function () {
        var e = new TypeError('bad', { cause: { why: 1 } }), c = structuredClone(e);
        assert.ok(c instanceof TypeError);
        assert.equal(c.message, 'bad');
        assert.equal(c.stack, e.stack);
        assert.deepEqual(c.cause, { why: 1 });
        assert.equal(Object.getOwnPropertyDescriptor(c, 'message').enumerable, false);
        var r = new Error('x');
        r.name = 'RangeError';
        assert.ok(structuredClone(r) instanceof RangeError, 'prototype chosen from the name');
        r.name = 'Foo';
        assert.equal(structuredClone(r).name, 'Error', 'unknown names become Error');
        r = new Error('y');
        r.extra = 1;
        assert.equal(structuredClone(r).extra, undefined);
});

test('nested errors and errors without message', function () {
        var c = structuredClone({ e: new RangeError() });
        assert.ok(c.e instanceof RangeError);
        assert.equal(Object.prototype.hasOwnProperty.call(c.e, 'message'), false);
});

test('DOMException is cloneable', function () {
        var c = structuredClone(new DOMException('m', 'AbortError'));
        assert.ok(c instanceof DOMException);
        assert.deepEqual([c.name, c.message, c.code], ['AbortError', 'm', 20]);
});

test('functions, promises, weak collections throw DataCloneError', function () {
        dataCloneError(function () { structuredClone(function () {}); });
        dataCloneError(function () { structuredClone({ f: function () {} }); });
        dataCloneError(function () { structuredClone(Promise.resolve()); });
        dataCloneError(function () { structuredClone(new WeakMap()); });
        dataCloneError(function () { structuredClone(new WeakSet()); });
        dataCloneError(function () { structuredClone(new WeakRef({})); });
        dataCloneError(function () { structuredClone([].values()); });
});

test('platform objects that are not serializable throw DataCloneError', function () {
        dataCloneError(function () { structuredClone(new URL('http://h/')); });
        dataCloneError(function () { structuredClone(new URLSearchParams('a=1')); });
        dataCloneError(function () { structuredClone(new TextEncoder()); });
});

test('transfer detaches the source ArrayBuffer', function () {
        var ab = new Uint8Array([1, 2, 3, 4]).buffer, view = new Uint8Array(ab, 1, 2);
        var c = structuredClone({ ab: ab, view: view }, { transfer: [ab] });
        assert.equal(ab.byteLength, 0, 'detached');
        assert.deepEqual(Array.from(new Uint8Array(c.ab)), [1, 2, 3, 4]);
        assert.equal(c.view.buffer, c.ab);
        assert.deepEqual(Array.from(c.view), [2, 3]);
        var ab2 = new ArrayBuffer(2), c2 = structuredClone(ab2, { transfer: [ab2] });
        assert.equal(c2.byteLength, 2);
        assert.equal(ab2.byteLength, 0);
});

test('transfer list validation', function () {
        var ab = new ArrayBuffer(1);
        dataCloneError(function () { structuredClone(1, { transfer: [ab, ab] }); });
        dataCloneError(function () { structuredClone(1, { transfer: [{}] }); });
        assert.throws(function () { structuredClone(1, { transfer: 5 }); }, TypeError);
        assert.throws(function () { structuredClone(1, 5); }, TypeError);
        assert.equal(ab.byteLength, 1, 'nothing detached when cloning fails');
        dataCloneError(function () { structuredClone(function () {}, { transfer: [ab] }); });
        assert.equal(ab.byteLength, 1, 'nothing detached when serialization fails');
});

test('structuredClone requires an argument', function () {
        assert.throws(function () { structuredClone(); }, TypeError);
        assert.equal(structuredClone(undefined, undefined), undefined);
        assert.equal(structuredClone.length, 1);
});
