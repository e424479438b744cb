// engine/crypto.js: randomBytes, randomFill(Sync), randomInt, randomUUID,
// getRandomValues, timingSafeEqual.  A fake host hands out a counting
// pattern (0, 1, 2, ... mod 256) and records every request's length.
(function () {
        function patternHost() {
                var host = { next: 0, calls: [], uuids: 0 };
                host.getRandomValues = function (u8) {
                        if (!(u8 instanceof Uint8Array)) throw new Error('host wants a Uint8Array');
                        if (u8.length > 65536) throw new Error('host asked for ' + u8.length + ' bytes');
                        host.calls.push(u8.length);
                        for (var i = 0; i < u8.length; i++) u8[i] = host.next++ & 255;
                        return u8;
                };
                host.randomUUID = function () {
                        host.uuids++;
                        return '00000000-0000-4000-8000-00000000000' + host.uuids;
                };
                return host;
        }
        // A host serving the given bytes first, then zeros.
        function scriptedHost(bytes) {
                var host = { pos: 0, calls: [] };
                host.getRandomValues = function (u8) {
                        host.calls.push(u8.length);
                        for (var i = 0; i < u8.length; i++) u8[i] = host.pos < bytes.length ? bytes[host.pos++] : (host.pos++, 0);
                        return u8;
                };
                host.randomUUID = function () { return 'unused'; };
                return host;
        }
        // A host with a decent PRNG (xorshift32), for distribution checks.
        function prngHost(seed) {
                var x = seed;
                return {
                        getRandomValues: function (u8) {
                                for (var i = 0; i < u8.length; i++) {
                                        x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
                                        u8[i] = x >>> 24;
                                }
                        },
                        randomUUID: function () { return 'unused'; },
                };
        }
        function install(host) { return __chidoriInstallCrypto(host).module; }
        function isPattern(u8, start) {
                for (var i = 0; i < u8.length; i++) if (u8[i] !== ((start + i) & 255)) return false;
                return true;
        }

        test('randomBytes returns host bytes in a Uint8Array', function () {
                var host = patternHost(), c = install(host);
                var b = c.randomBytes(10);
                assert.ok(b instanceof Uint8Array);
                assert.deepEqual(Array.from(b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
                assert.equal(b.buffer.byteLength, 10);
                assert.deepEqual(Array.from(c.randomBytes(3)), [10, 11, 12]);
                assert.deepEqual(host.calls, [10, 3]);
        });

        test('randomBytes(0) is empty and asks the host nothing', function () {
                var host = patternHost(), c = install(host);
                assert.equal(c.randomBytes(0).length, 0);
                assert.deepEqual(host.calls, []);
        });

        test('randomBytes asks the host in chunks of at most 65536 bytes', function () {
                var host = patternHost(), c = install(host);
                var b = c.randomBytes(200000);
                assert.equal(b.length, 200000);
                assert.deepEqual(host.calls, [65536, 65536, 65536, 3392]);
                assert.ok(isPattern(b, 0), 'bytes in order');
                host.calls = [];
                c.randomBytes(65536);
                assert.deepEqual(host.calls, [65536]);
        });

        test('randomBytes size errors, as in Node', function () {
                var host = patternHost(), c = install(host);
                var range = 'The value of "size" is out of range. It must be >= 0 && <= 2147483647. Received ';
                assert.throws(function () { c.randomBytes(-1); }, { name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: range + '-1' });
                assert.throws(function () { c.randomBytes(NaN); }, { name: 'RangeError', message: range + 'NaN' });
                assert.throws(function () { c.randomBytes(2147483648); }, { name: 'RangeError', message: range + '2147483648' });
                assert.throws(function () { c.randomBytes(2 ** 32); }, { name: 'RangeError', message: range + '4294967296' });
                assert.throws(function () { c.randomBytes(2 ** 33); }, { name: 'RangeError', message: range + '8_589_934_592' });
                assert.throws(function () { c.randomBytes(Infinity); }, { name: 'RangeError' });
                assert.throws(function () { c.randomBytes('1'); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "size" argument must be of type number. Received type string (\'1\')' });
                assert.throws(function () { c.randomBytes(); }, { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
                assert.equal(c.randomBytes(1.5).length, 1, 'a fractional size is truncated, as in Node');
                assert.throws(function () { c.randomBytes(1, 5); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "callback" argument must be of type function. Received type number (5)' });
                assert.deepEqual(host.calls, [1], 'no randomness drawn for rejected calls');
        });

        test('randomBytes(n, cb) calls back later with (null, bytes)', function () {
                var host = patternHost(), c = install(host), called = false;
                return new Promise(function (resolve, reject) {
                        var r = c.randomBytes(4, function (err, b) {
                                try {
                                        assert.equal(err, null);
                                        assert.ok(b instanceof Uint8Array);
                                        assert.deepEqual(Array.from(b), [0, 1, 2, 3]);
                                        called = true;
                                        resolve();
                                } catch (e) {
                                        reject(e);
                                }
                        });
                        assert.equal(r, undefined);
                        assert.equal(called, false, 'not synchronous');
                        assert.deepEqual(host.calls, [4], 'randomness drawn at the call, in program order');
                });
        });

        test('randomFillSync fills views, ArrayBuffers and ranges counted in elements', function () {
                var host = patternHost(), c = install(host);
                var u8 = new Uint8Array(6);
                assert.equal(c.randomFillSync(u8), u8);
                assert.deepEqual(Array.from(u8), [0, 1, 2, 3, 4, 5]);
                var u8b = new Uint8Array(6);
                c.randomFillSync(u8b, 2);
                assert.deepEqual(Array.from(u8b), [0, 0, 6, 7, 8, 9]);
                var u8c = new Uint8Array(6);
                c.randomFillSync(u8c, 1, 2);
                assert.deepEqual(Array.from(u8c), [0, 10, 11, 0, 0, 0]);
                var u32 = new Uint32Array(3);
                c.randomFillSync(u32, 1, 1);  // elements, not bytes
                assert.deepEqual(Array.from(new Uint8Array(u32.buffer)), [0, 0, 0, 0, 12, 13, 14, 15, 0, 0, 0, 0]);
                var ab = new ArrayBuffer(2);
                assert.equal(c.randomFillSync(ab), ab);
                assert.deepEqual(Array.from(new Uint8Array(ab)), [16, 17]);
                var backing = new Uint8Array(8);
                c.randomFillSync(new DataView(backing.buffer, 2, 3));
                assert.deepEqual(Array.from(backing), [0, 0, 18, 19, 20, 0, 0, 0]);
                c.randomFillSync(new Uint8Array(backing.buffer, 6, 2), 1);
                assert.deepEqual(Array.from(backing), [0, 0, 18, 19, 20, 0, 0, 21]);
        });

        test('randomFillSync errors, as in Node', function () {
                var c = install(patternHost());
                assert.throws(function () { c.randomFillSync(new Uint8Array(4), 5); },
                        { name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: 'The value of "offset" is out of range. It must be >= 0 && <= 4. Received 5' });
                assert.throws(function () { c.randomFillSync(new Uint8Array(4), 1, 5); },
                        { name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: 'The value of "size + offset" is out of range. It must be <= 4. Received 6' });
                assert.throws(function () { c.randomFillSync('x'); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "buf" argument must be an instance of ArrayBuffer or ArrayBufferView. Received type string (\'x\')' });
                assert.throws(function () { c.randomFillSync(new Uint8Array(4), 'a'); }, { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
                assert.throws(function () { c.randomFill(new Uint8Array(4)); }, { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
        });

        test('randomFill calls back later with (null, buf)', function () {
                var c = install(patternHost()), buf = new Uint8Array(4);
                return new Promise(function (resolve, reject) {
                        c.randomFill(buf, 1, 2, function (err, b) {
                                try {
                                        assert.equal(err, null);
                                        assert.equal(b, buf);
                                        assert.deepEqual(Array.from(buf), [0, 0, 1, 0]);
                                        resolve();
                                } catch (e) {
                                        reject(e);
                                }
                        });
                });
        });

        test('randomInt stays in [min, max) and covers it', function () {
                var c = install(prngHost(2463534242));
                var seen = {};
                for (var i = 0; i < 2000; i++) {
                        var n = c.randomInt(-3, 4);
                        if (!(Number.isInteger(n) && n >= -3 && n < 4)) throw new Error('out of range: ' + n);
                        seen[n] = (seen[n] || 0) + 1;
                }
                assert.deepEqual(Object.keys(seen).map(Number).sort(function (a, b) { return a - b; }), [-3, -2, -1, 0, 1, 2, 3]);
                for (var k in seen) assert.ok(seen[k] > 200 && seen[k] < 380, 'bucket ' + k + ': ' + seen[k]);
                for (i = 0; i < 200; i++) {
                        n = c.randomInt(10);
                        assert.ok(n >= 0 && n < 10);
                        n = c.randomInt(2 ** 47, 2 ** 48);
                        assert.ok(n >= 2 ** 47 && n < 2 ** 48 && Number.isSafeInteger(n));
                        n = c.randomInt(-(2 ** 53) + 1, -(2 ** 53) + 3);
                        assert.ok(n === -(2 ** 53) + 1 || n === -(2 ** 53) + 2);
                }
                assert.equal(c.randomInt(5, 6), 5);
        });

        test('randomInt maps 48-bit big-endian draws by x % range + min', function () {
                // draws: 0x000000000007, 0x000000000105
                var c = install(scriptedHost([0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 1, 5]));
                assert.equal(c.randomInt(5), 2);          // 7 % 5
                assert.equal(c.randomInt(100, 200), 161); // 261 % 100 + 100
        });

        test('randomInt rejects draws at or above the largest multiple of the range (no modulo bias)', function () {
                // range 3 divides 2^48 - 1, so the limit is 2^48 - 1 itself and an
                // all-ones draw must be thrown away; the next draw is 4.
                var ones = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
                var c = install(scriptedHost(ones.concat([0, 0, 0, 0, 0, 4])));
                assert.equal(c.randomInt(10, 13), 11);    // 4 % 3 + 10
                // range 2^47 + 1: the limit is the range itself, so about half
                // of all draws are thrown away (2^48 - 2 among them).
                var range = 2 ** 47 + 1;
                assert.equal((2 ** 48 - 1) - ((2 ** 48 - 1) % range), range);
                var c2 = install(scriptedHost([0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0, 0, 9]));
                assert.equal(c2.randomInt(range), 9, '2^48 - 2 is rejected');
        });

        test('randomInt draws from a 768-byte cache: one host call per 128 draws', function () {
                var host = patternHost(), c = install(host);
                for (var i = 0; i < 128; i++) c.randomInt(1000);
                assert.deepEqual(host.calls, [768]);
                c.randomInt(1000);
                assert.deepEqual(host.calls, [768, 768]);
        });

        test('randomInt argument errors, as in Node', function () {
                var host = patternHost(), c = install(host);
                assert.throws(function () { c.randomInt(0); },
                        { name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: 'The value of "max" is out of range. It must be greater than the value of "min" (0). Received 0' });
                assert.throws(function () { c.randomInt(5, 3); },
                        { name: 'RangeError', message: 'The value of "max" is out of range. It must be greater than the value of "min" (5). Received 3' });
                assert.throws(function () { c.randomInt(-5, -5); }, { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
                assert.throws(function () { c.randomInt(0, 2 ** 48); },
                        { name: 'RangeError', message: 'The value of "max - min" is out of range. It must be <= 281474976710655. Received 281_474_976_710_656' });
                assert.throws(function () { c.randomInt(2 ** 48); },
                        { name: 'RangeError', message: 'The value of "max" is out of range. It must be <= 281474976710655. Received 281_474_976_710_656' });
                assert.throws(function () { c.randomInt(1.5); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "max" argument must be a safe integer. Received type number (1.5)' });
                assert.throws(function () { c.randomInt('1'); }, { message: 'The "max" argument must be a safe integer. Received type string (\'1\')' });
                assert.throws(function () { c.randomInt(2 ** 53); }, { message: 'The "max" argument must be a safe integer. Received type number (9007199254740992)' });
                assert.throws(function () { c.randomInt(0.5, 3); }, { code: 'ERR_INVALID_ARG_TYPE', message: 'The "min" argument must be a safe integer. Received type number (0.5)' });
                assert.throws(function () { c.randomInt(1, 2, 3); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "callback" argument must be of type function. Received type number (3)' });
                assert.deepEqual(host.calls, [], 'no randomness drawn for rejected calls');
        });

        test('randomInt with a callback, with and without min', function () {
                var c = install(scriptedHost([0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 8]));
                var got = [];
                var r = c.randomInt(5, function (err, n) { got.push([err, n]); });
                assert.equal(r, undefined);
                c.randomInt(10, 20, function (err, n) { got.push([err, n]); });
                assert.deepEqual(got, [], 'not synchronous');
                return Promise.resolve().then(function () {}).then(function () {
                        assert.deepEqual(got, [[null, 2], [null, 18]]);
                });
        });

        test('getRandomValues fills integer arrays in place through the host', function () {
                var host = patternHost(), c = install(host);
                var u16 = new Uint16Array(2);
                assert.equal(c.getRandomValues(u16), u16);
                assert.deepEqual(Array.from(new Uint8Array(u16.buffer)), [0, 1, 2, 3]);
                var big = new Uint8Array(65536);
                c.getRandomValues(big);
                assert.equal(big[65535], (4 + 65535) & 255);
                c.getRandomValues(new BigInt64Array(1));
                c.getRandomValues(new Int8Array(0));
                assert.deepEqual(host.calls, [4, 65536, 8], 'an empty array asks nothing');
                var off = new Uint8Array(8);
                c.getRandomValues(new Uint8Array(off.buffer, 4, 2));
                assert.deepEqual(Array.from(off), [0, 0, 0, 0, 12, 13, 0, 0]);
                assert.equal(c.webcrypto.getRandomValues, c.getRandomValues);
        });

        test('getRandomValues errors are DOMExceptions, as in Node', function () {
                var host = patternHost(), c = install(host);
                [new Float32Array(1), new Float64Array(1), new DataView(new ArrayBuffer(1)), new ArrayBuffer(1), [1], 'x', undefined].forEach(function (v) {
                        var e = assert.throws(function () { c.getRandomValues(v); },
                                { name: 'TypeMismatchError', code: 17, message: 'The data argument must be an integer-type TypedArray' });
                        assert.ok(e instanceof DOMException);
                });
                var e = assert.throws(function () { c.getRandomValues(new Uint8Array(65537)); },
                        { name: 'QuotaExceededError', code: 22, message: 'The requested length exceeds 65,536 bytes' });
                assert.ok(e instanceof DOMException);
                assert.throws(function () { c.getRandomValues(new Uint32Array(16385)); }, { name: 'QuotaExceededError' });
                assert.deepEqual(host.calls, []);
        });

        test('randomUUID comes from the host', function () {
                var host = patternHost(), c = install(host);
                assert.equal(c.randomUUID(), '00000000-0000-4000-8000-000000000001');
                assert.equal(c.webcrypto.randomUUID(), '00000000-0000-4000-8000-000000000002');
                assert.equal(c.randomUUID({ disableEntropyCache: true }), '00000000-0000-4000-8000-000000000003');
                assert.throws(function () { c.randomUUID(5); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "options" argument must be of type object. Received type number (5)' });
                assert.equal(host.uuids, 3);
                assert.deepEqual(host.calls, []);
        });

        test('timingSafeEqual compares bytes of any buffer or view', function () {
                var c = install(patternHost());
                assert.equal(c.timingSafeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3])), true);
                assert.equal(c.timingSafeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4])), false);
                assert.equal(c.timingSafeEqual(new Uint8Array([128, 2]), new Uint8Array([0, 2])), false);
                assert.equal(c.timingSafeEqual(new Uint8Array(0), new Uint8Array(0)), true);
                assert.equal(c.timingSafeEqual(new Uint16Array([0x0201]), new Uint8Array([1, 2])), true, 'bytes, not elements');
                assert.equal(c.timingSafeEqual(new Uint8Array([1, 2]).buffer, new DataView(new Uint8Array([9, 1, 2]).buffer, 1)), true);
        });

        test('timingSafeEqual errors, as in Node', function () {
                var c = install(patternHost());
                assert.throws(function () { c.timingSafeEqual(new Uint8Array(1), new Uint8Array(2)); },
                        { name: 'RangeError', code: 'ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH', message: 'Input buffers must have the same byte length' });
                assert.throws(function () { c.timingSafeEqual('a', 'a'); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "buf1" argument must be an instance of ArrayBuffer, Buffer, TypedArray, or DataView.' });
                assert.throws(function () { c.timingSafeEqual(new Uint8Array(1), [0]); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "buf2" argument must be an instance of ArrayBuffer, Buffer, TypedArray, or DataView.' });
        });

        test('each install has its own host and randomInt cache', function () {
                var h1 = patternHost(), h2 = patternHost();
                var c1 = install(h1), c2 = install(h2);
                c1.randomBytes(5);
                assert.deepEqual(Array.from(c2.randomBytes(2)), [0, 1]);
                c1.randomInt(3);
                assert.deepEqual(h1.calls, [5, 768]);
                assert.deepEqual(h2.calls, [2]);
        });
})();
