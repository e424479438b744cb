// DOMException, queueMicrotask, and how engine/web.js installs its globals.
var NAMES = ['DOMException', 'TextEncoder', 'TextDecoder', 'atob', 'btoa', 'URL', 'URLSearchParams', 'structuredClone', 'queueMicrotask'];

test('globals are writable, configurable, non-enumerable data properties', function () {
        NAMES.forEach(function (n) {
                var d = Object.getOwnPropertyDescriptor(globalThis, n);
                assert.ok(d, n + ' defined');
                assert.equal(typeof d.value, 'function', n);
                assert.deepEqual([d.writable, d.enumerable, d.configurable], [true, false, true], n);
        });
});

test('no helper globals leak', function () {
        ['G', 'O', 'def', 'install', 'str', 'usv', 'slots', 'slot', 'parse', 'serialize', 'enc', 'formParse',
         'DEFPORT', 'ipv4', 'ipv6', 'punyEnc', 'clone', 'utf8Into', 'DECODERS', 'B64', 'DOMEx'].forEach(function (n) {
                assert.equal(n in globalThis, false, n);
        });
        // Everything web.js left on the global object must be an ECMAScript
        // built-in, one of the nine web APIs, or the runner's print().
        var builtins = ['globalThis', 'Infinity', 'NaN', 'undefined', 'eval', 'isFinite', 'isNaN', 'parseFloat',
                'parseInt', 'decodeURI', 'decodeURIComponent', 'encodeURI', 'encodeURIComponent', 'escape', 'unescape',
                'console', 'print'];
        test.initialGlobals.forEach(function (n) {
                if (NAMES.indexOf(n) >= 0 || builtins.indexOf(n) >= 0 || /^[A-Z]/.test(n) && n !== 'G' && n !== 'O' && n !== 'U' && n !== 'Q') return;
                throw new Error('unexpected global ' + n);
        });
        assert.equal(test.initialGlobals.indexOf('DEFPORT'), -1);
});

test('DOMException basics', function () {
        var e = new DOMException('boom', 'AbortError');
        assert.equal(e.name, 'AbortError');
        assert.equal(e.message, 'boom');
        assert.equal(e.code, 20);
        assert.ok(e instanceof DOMException);
        assert.ok(e instanceof Error);
        assert.equal(String(e), 'AbortError: boom');
        assert.equal(Object.prototype.toString.call(e), '[object DOMException]');
        assert.equal(typeof e.stack, 'string');
});

test('DOMException defaults', function () {
        var e = new DOMException();
        assert.equal(e.name, 'Error');
        assert.equal(e.message, '');
        assert.equal(e.code, 0);
        assert.equal(new DOMException('x', 'CustomName').code, 0);
        assert.equal(DOMException.length, 0);
});

test('DOMException legacy codes', function () {
        var codes = { IndexSizeError: 1, HierarchyRequestError: 3, InvalidCharacterError: 5, NotFoundError: 8,
                NotSupportedError: 9, InvalidStateError: 11, SyntaxError: 12, SecurityError: 18, NetworkError: 19,
                AbortError: 20, QuotaExceededError: 22, TimeoutError: 23, DataCloneError: 25,
                EncodingError: 0, NotAllowedError: 0 };
        Object.keys(codes).forEach(function (n) { assert.equal(new DOMException('', n).code, codes[n], n); });
});

test('DOMException constants on constructor and prototype', function () {
        assert.equal(DOMException.INDEX_SIZE_ERR, 1);
        assert.equal(DOMException.SYNTAX_ERR, 12);
        assert.equal(DOMException.DATA_CLONE_ERR, 25);
        assert.equal(new DOMException().ABORT_ERR, 20);
        assert.deepEqual(Object.getOwnPropertyDescriptor(DOMException, 'TIMEOUT_ERR'),
                { value: 23, writable: false, enumerable: true, configurable: false });
});

test('DOMException name/message/code are prototype getters', function () {
        var e = new DOMException('m', 'SyntaxError');
        assert.deepEqual(Object.getOwnPropertyNames(e).filter(function (k) { return k !== 'line' && k !== 'column'; }), ['stack']);
        assert.equal(typeof Object.getOwnPropertyDescriptor(DOMException.prototype, 'name').get, 'function');
        assert.throws(function () { return Object.getOwnPropertyDescriptor(DOMException.prototype, 'code').get.call({}); }, TypeError);
        assert.throws(function () { DOMException(); }, TypeError);
});

test('DOMException accepts an options bag with cause (as Node does)', function () {
        var e = new DOMException('m', { name: 'TimeoutError', cause: 5 });
        assert.equal(e.name, 'TimeoutError');
        assert.equal(e.code, 23);
        assert.equal(e.cause, 5);
});

test('queueMicrotask runs after the current job, in order', function () {
        var log = [];
        return new Promise(function (resolve) {
                queueMicrotask(function () { log.push(1); });
                queueMicrotask(function () { log.push(2); queueMicrotask(function () { log.push(4); resolve(); }); });
                Promise.resolve().then(function () { log.push(3); });
                log.push(0);
        }).then(function () {
                assert.deepEqual(log, [0, 1, 2, 3, 4]);
        });
});

test('queueMicrotask calls back with no arguments and undefined this', function () {
        return new Promise(function (resolve) {
                queueMicrotask(function () { 'use strict'; resolve([arguments.length, this]); });
        }).then(function (r) {
                assert.deepEqual(r, [0, undefined]);
        });
});

test('queueMicrotask rejects non-callables', function () {
        assert.throws(function () { queueMicrotask(); }, TypeError);
        assert.throws(function () { queueMicrotask(null); }, TypeError);
        assert.throws(function () { queueMicrotask({}); }, TypeError);
});

test('an exception in a microtask does not stop later microtasks', function () {
        return new Promise(function (resolve) {
                queueMicrotask(function () { throw new Error('ignored'); });
                queueMicrotask(resolve);
        });
});

test('queueMicrotask is unaffected by a patched Promise.prototype.then', function () {
        var then = Promise.prototype.then, called = false;
        Promise.prototype.then = function () { called = true; return then.apply(this, arguments); };
        try {
                queueMicrotask(function () {});
        } finally {
                Promise.prototype.then = then;
        }
        assert.equal(called, false);
});
