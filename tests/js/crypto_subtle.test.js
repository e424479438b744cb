// engine/crypto.js: subtle.digest, the shape of what __chidoriInstallCrypto
// returns, and that the file leaks nothing but its one hidden global.
(function () {
        var host = {
                getRandomValues: function (u8) { u8.fill(7); return u8; },
                randomUUID: function () { return '00000000-0000-4000-8000-000000000000'; },
        };
        var installed = __chidoriInstallCrypto(host);
        var crypto = installed.module, subtle = installed.subtle;

        function toHex(ab) {
                var u8 = new Uint8Array(ab), s = '';
                for (var i = 0; i < u8.length; i++) s += (u8[i] < 16 ? '0' : '') + u8[i].toString(16);
                return s;
        }
        function abc() { return new Uint8Array([0x61, 0x62, 0x63]); }
        // Resolves with the rejection reason; fails if the promise fulfils.
        function rejection(p) {
                return p.then(function (v) { throw new Error('expected a rejection, got ' + v); }, function (e) { return e; });
        }

        test('subtle.digest: SHA-1, SHA-256, SHA-384, SHA-512 of "abc" resolve to ArrayBuffers', function () {
                var want = {
                        'SHA-1': 'a9993e364706816aba3e25717850c26c9cd0d89d',
                        'SHA-256': 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
                        'SHA-384': 'cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7',
                        'SHA-512': 'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
                };
                return Promise.all(Object.keys(want).map(function (alg) {
                        var p = subtle.digest(alg, abc());
                        assert.ok(p instanceof Promise, alg + ' returns a Promise');
                        return p.then(function (ab) {
                                assert.ok(ab instanceof ArrayBuffer, alg + ' ArrayBuffer');
                                assert.equal(toHex(ab), want[alg], alg);
                        });
                }));
        });

        test('subtle.digest: algorithm objects, any letter case, every BufferSource', function () {
                var sha256abc = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
                var padded = new Uint8Array([0, 0x61, 0x62, 0x63, 0]);
                return Promise.all([
                        subtle.digest({ name: 'SHA-256' }, abc()),
                        subtle.digest({ name: 'sha-256', length: 99 }, abc()),
                        subtle.digest('Sha-256', abc().buffer),
                        subtle.digest('SHA-256', new DataView(padded.buffer, 1, 3)),
                        subtle.digest('SHA-256', padded.subarray(1, 4)),
                ]).then(function (r) {
                        r.forEach(function (ab, i) { assert.equal(toHex(ab), sha256abc, 'case ' + i); });
                        return subtle.digest('SHA-256', new Uint8Array(0));
                }).then(function (ab) {
                        assert.equal(toHex(ab), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'empty');
                });
        });

        test('subtle.digest reads the data when called', function () {
                var data = abc();
                var p = subtle.digest('SHA-1', data);
                data[0] = 0;
                return p.then(function (ab) { assert.equal(toHex(ab), 'a9993e364706816aba3e25717850c26c9cd0d89d'); });
        });

        test('subtle.digest rejects unknown algorithms with NotSupportedError', function () {
                return Promise.all(['MD5', 'SHA-224', 'sha256', 'SHA3-256', '', { name: 'SHA-999' }, 5].map(function (alg) {
                        var p = subtle.digest(alg, abc());
                        assert.ok(p instanceof Promise);
                        return rejection(p).then(function (e) {
                                assert.ok(e instanceof DOMException, JSON.stringify(alg) + ' DOMException');
                                assert.equal(e.name, 'NotSupportedError');
                                assert.equal(e.code, 9);
                                assert.equal(e.message, 'Unrecognized algorithm name');
                        });
                }));
        });

        test('subtle.digest rejects bad data and missing arguments with TypeError', function () {
                return Promise.all([
                        rejection(subtle.digest('SHA-256', 'abc')),
                        rejection(subtle.digest('SHA-256', [1, 2])),
                        rejection(subtle.digest('SHA-256', null)),
                        rejection(subtle.digest('SHA-256')),
                        rejection(subtle.digest({}, abc())),
                ]).then(function (errs) {
                        errs.forEach(function (e, i) { assert.equal(e.name, 'TypeError', 'case ' + i); });
                        assert.equal(errs[0].message, "Failed to execute 'digest' on 'SubtleCrypto': 2nd argument is not instance of ArrayBuffer, Buffer, TypedArray, or DataView.");
                        assert.equal(errs[3].message, "Failed to execute 'digest' on 'SubtleCrypto': 2 arguments required, but only 1 present.");
                });
        });

        test('what __chidoriInstallCrypto returns', function () {
                assert.deepEqual(Object.keys(installed).sort(), ['module', 'subtle']);
                assert.deepEqual(Object.keys(crypto).sort(), ['createHash', 'createHmac', 'getHashes', 'getRandomValues', 'hash',
                        'randomBytes', 'randomFill', 'randomFillSync', 'randomInt', 'randomUUID', 'subtle', 'timingSafeEqual', 'webcrypto']);
                assert.equal(crypto.subtle, subtle);
                assert.equal(crypto.webcrypto.subtle, subtle);
                assert.equal(crypto.webcrypto.getRandomValues, crypto.getRandomValues);
                assert.equal(crypto.webcrypto.randomUUID, crypto.randomUUID);
                assert.equal(typeof subtle.digest, 'function');
                assert.equal(Object.prototype.toString.call(subtle), '[object SubtleCrypto]');
                assert.equal(Object.prototype.toString.call(crypto.webcrypto), '[object Crypto]');
                assert.equal(crypto.createHash.name, 'createHash');
                var other = __chidoriInstallCrypto(host);
                assert.notEqual(other.module, crypto, 'a fresh module per install');
                assert.notEqual(other.subtle, subtle);
        });

        test('hashes and HMACs are objects of their own classes with private state', function () {
                var h = crypto.createHash('sha1');
                assert.deepEqual(Object.keys(h), []);
                assert.throws(function () { h.update.call({}, 'x'); }, TypeError);
                var m = crypto.createHmac('sha1', 'k');
                assert.deepEqual(Object.keys(m), []);
                assert.throws(function () { m.digest.call(h); }, TypeError);
                assert.equal(typeof h.copy, 'function');
                assert.equal(m.copy, undefined, 'Node has no Hmac.copy');
        });

        test('engine/crypto.js defines one hidden global and leaks nothing else', function () {
                var d = Object.getOwnPropertyDescriptor(globalThis, '__chidoriInstallCrypto');
                assert.ok(d, 'defined');
                assert.equal(typeof d.value, 'function');
                assert.equal(d.enumerable, false);
                assert.equal(d.configurable, true);
                ['install', 'Core', 'Hash', 'Hmac', 'ALGORITHMS', 'sha256Block', 'sha512Blocks', 'md5Block', 'utf8Write', 'feed',
                        'K256', 'W', 'IV', 'createHash', 'createHmac', 'subtleDigest', 'nodeError', 'bytesOf', 'B64', 'scratch'].forEach(function (n) {
                        assert.equal(n in globalThis, false, n);
                });
                // jsrun evaluates engine files after the harness snapshots the
                // globals, and test files in the order given (crypto_* before
                // web_*, whose helpers are globals).  So the only new globals
                // here are the harness's own three and the engine modules'
                // installers.
                var added = Object.getOwnPropertyNames(globalThis).filter(function (n) { return test.initialGlobals.indexOf(n) < 0; });
                assert.ok(added.indexOf('__chidoriInstallCrypto') >= 0);
                assert.deepEqual(added.filter(function (n) { return !/^__chidoriInstall[A-Z]/.test(n); }).sort(),
                        ['__jsrunDone', 'assert', 'test']);
        });
})();
