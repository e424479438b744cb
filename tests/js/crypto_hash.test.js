// engine/crypto.js: createHash, hash, getHashes.  Vectors: FIPS 180-2
// appendix examples and the NIST CSRC examples ("abc", the 448-bit and
// 896-bit messages, a million 'a'), RFC 1321 for MD5; every value also
// checked against Python's hashlib and Node 20's crypto.
(function () {
        var host = {
                getRandomValues: function () { throw new Error('hashing must not ask for randomness'); },
                randomUUID: function () { throw new Error('hashing must not ask for randomness'); },
        };
        var crypto = __chidoriInstallCrypto(host).module;
        var ALGS = ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512'];

        function toHex(u8) {
                var s = '';
                for (var i = 0; i < u8.length; i++) s += (u8[i] < 16 ? '0' : '') + u8[i].toString(16);
                return s;
        }
        function utf8(s) { return new TextEncoder().encode(s); }
        function hex(alg, data, enc) { return crypto.createHash(alg).update(data, enc).digest('hex'); }
        // A small deterministic PRNG (xorshift32) for data and split points.
        function prng(seed) {
                var x = seed | 0 || 1;
                return function (n) {
                        x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
                        return (x >>> 0) % n;
                };
        }
        function randomBytes(n, seed) {
                var r = prng(seed), b = new Uint8Array(n);
                for (var i = 0; i < n; i++) b[i] = r(256);
                return b;
        }

        var M448 = 'abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq';
        var M896 = 'abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu';
        var VECTORS = {
                md5: ['d41d8cd98f00b204e9800998ecf8427e', '900150983cd24fb0d6963f7d28e17f72',
                        '8215ef0796a20bcaaae116d3876c664a', '03dd8807a93175fb062dfb55dc7d359c', '7707d6ae4e027c70eea2a935c2296f21'],
                sha1: ['da39a3ee5e6b4b0d3255bfef95601890afd80709', 'a9993e364706816aba3e25717850c26c9cd0d89d',
                        '84983e441c3bd26ebaae4aa1f95129e5e54670f1', 'a49b2446a02c645bf419f995b67091253a04a259',
                        '34aa973cd4c4daa4f61eeb2bdbad27316534016f'],
                sha224: ['d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f',
                        '23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7',
                        '75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525',
                        'c97ca9a559850ce97a04a96def6d99a9e0e0e2ab14e6b8df265fc0b3',
                        '20794655980c91d8bbb4c1ea97618a4bf03f42581948b2ee4ee7ad67'],
                sha256: ['e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
                        'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
                        '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
                        'cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1',
                        'cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0'],
                sha384: ['38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da274edebfe76f65fbd51ad2f14898b95b',
                        'cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7',
                        '3391fdddfc8dc7393707a65b1b4709397cf8b1d162af05abfe8f450de5f36bc6b0455a8520bc4e6f5fe95b1fe3c8452b',
                        '09330c33f71147e83d192fc782cd1b4753111b173b3b05d22fa08086e3b0f712fcc7c71a557e2db966c3e9fa91746039',
                        '9d0e1809716474cb086e834e310a4a1ced149e9c00f248527972cec5704c2a5b07b8b3dc38ecc4ebae97ddd87f3d8985'],
                sha512: ['cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e',
                        'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
                        '204a8fc6dda82f0a0ced7beb8e08a41657c16ef468b228a8279be331a703c33596fd15c13b1b07f9aa1d3bea57789ca031ad85c7a71dd70354ec631238ca3445',
                        '8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909',
                        'e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973ebde0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b'],
        };
        var MILLION_A = 'a'.repeat(1000000);

        ALGS.forEach(function (alg) {
                var v = VECTORS[alg];
                test(alg + ': empty message', function () {
                        assert.equal(hex(alg, ''), v[0]);
                        assert.equal(crypto.createHash(alg).digest('hex'), v[0], 'no update at all');
                        assert.equal(hex(alg, new Uint8Array(0)), v[0]);
                });
                test(alg + ': "abc"', function () {
                        assert.equal(hex(alg, 'abc'), v[1]);
                        assert.equal(hex(alg, new Uint8Array([0x61, 0x62, 0x63])), v[1]);
                });
                test(alg + ': the 448-bit message', function () { assert.equal(hex(alg, M448), v[2]); });
                test(alg + ': the 896-bit message', function () { assert.equal(hex(alg, M896), v[3]); });
                test(alg + ": a million 'a' (one string)", function () { assert.equal(hex(alg, MILLION_A), v[4]); });
        });

        test("sha1 and sha256: a million 'a' in 1000-byte updates", function () {
                var chunk = new Uint8Array(1000).fill(0x61);
                ['sha1', 'sha256', 'sha512'].forEach(function (alg) {
                        var h = crypto.createHash(alg);
                        for (var i = 0; i < 1000; i++) h.update(chunk);
                        assert.equal(h.digest('hex'), VECTORS[alg][4], alg);
                });
        });

        test('md5: the RFC 1321 test suite', function () {
                assert.equal(hex('md5', 'a'), '0cc175b9c0f1b6a831c399e269772661');
                assert.equal(hex('md5', 'message digest'), 'f96b697d7cb7938d525a2f31aaf161d0');
                assert.equal(hex('md5', 'abcdefghijklmnopqrstuvwxyz'), 'c3fcd3d76192e4007dfb496cca67e13b');
                assert.equal(hex('md5', 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'), 'd174ab98d277d9f5a5611c2c9f419d9f');
                assert.equal(hex('md5', '1234567890'.repeat(8)), '57edf4a22be3c955ac49da2e2107b67a');
        });

        test('padding edges: lengths around one and two blocks', function () {
                // n zero bytes, n where the length field stops fitting in the
                // last block (expected values from Node 20).
                var z = function (n) { return new Uint8Array(n); };
                assert.equal(hex('sha256', z(55)), '02779466cdec163811d078815c633f21901413081449002f24aa3e80f0b88ef7');
                assert.equal(hex('sha256', z(56)), 'd4817aa5497628e7c77e6b606107042bbba3130888c5f47a375e6179be789fbb');
                assert.equal(hex('sha256', z(64)), 'f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b');
                assert.equal(hex('sha512', z(111)), '77ddd3a542e530fd047b8977c657ba6ce72f1492e360b2b2212cd264e75ec03882e4ff0525517ab4207d14c70c2259ba88d4d335ee0e7e20543d22102ab1788c');
                assert.equal(hex('sha512', z(112)), '2be2e788c8a8adeaa9c89a7f78904cacea6e39297d75e0573a73c756234534d6627ab4156b48a6657b29ab8beb73334040ad39ead81446bb09c70704ec707952');
                assert.equal(hex('md5', z(56)), 'e3c4dd21a9171fd39d208efa09bf7883');
        });

        test('incremental updates with random split points match one-shot', function () {
                var r = prng(12345);
                ALGS.forEach(function (alg) {
                        for (var round = 0; round < 20; round++) {
                                var n = r(700);
                                var data = randomBytes(n, round + 1);
                                var want = hex(alg, data);
                                var h = crypto.createHash(alg);
                                for (var at = 0; at < n;) {
                                        var len = r(4) === 0 ? 0 : r(200);
                                        if (len > n - at) len = n - at;
                                        h.update(data.subarray(at, at + len));
                                        at += len;
                                }
                                assert.equal(h.digest('hex'), want, alg + ' n=' + n);
                        }
                });
        });

        test('incremental updates at every split point of a 300-byte message', function () {
                var data = randomBytes(300, 7);
                ['md5', 'sha1', 'sha256', 'sha512'].forEach(function (alg) {
                        var want = hex(alg, data);
                        for (var k = 0; k <= data.length; k++) {
                                var got = crypto.createHash(alg).update(data.subarray(0, k)).update(data.subarray(k)).digest('hex');
                                if (got !== want) throw new Error(alg + ' split at ' + k);
                        }
                });
        });

        test('UTF-8 bytes split inside multi-byte characters match the string', function () {
                var s = 'héllo wörld — 日本語 😀 ∑ 𝄞 end';
                var bytes = utf8(s);
                ALGS.forEach(function (alg) {
                        var want = hex(alg, s);
                        assert.equal(hex(alg, bytes), want, alg + ' bytes');
                        for (var k = 0; k <= bytes.length; k++) {
                                var got = crypto.createHash(alg).update(bytes.subarray(0, k)).update(bytes.subarray(k)).digest('hex');
                                if (got !== want) throw new Error(alg + ' split at byte ' + k);
                        }
                });
        });

        test('string updates split between characters match one-shot', function () {
                var s = 'añ€😀b'.repeat(40);
                var want = hex('sha256', s);
                for (var k = 0; k <= s.length; k++) {
                        var c = s.charCodeAt(k - 1);
                        if (c >= 0xd800 && c < 0xdc00) continue;  // would cut a surrogate pair
                        assert.equal(crypto.createHash('sha256').update(s.slice(0, k)).update(s.slice(k)).digest('hex'), want, 'k=' + k);
                }
        });

        test('a surrogate pair cut between two updates becomes two U+FFFD, as in Node', function () {
                var cut = crypto.createHash('sha1').update('\ud83d').update('\ude00').digest('hex');
                assert.equal(cut, '8750ec9ddfe293cd1dc39b4245c21c270f8f52b7');
                assert.equal(hex('sha1', '\ufffd\ufffd'), cut);
                assert.equal(hex('sha1', '\ud83d\ude00'), '9c533688a979a858cbd6a43c9f91aba624651f18');
                assert.equal(hex('sha1', '\ud800'), '9bdb77276c1852e1fb067820472812fcf6084024', 'lone surrogate');
        });

        test('long strings: surrogate pairs and 3-byte characters across the internal 8192-unit chunks', function () {
                [8190, 8191, 8192, 8193, 16383].forEach(function (pad) {
                        var s = 'x'.repeat(pad) + '😀€'.repeat(3000) + 'é';
                        assert.equal(hex('sha256', s), hex('sha256', utf8(s)), 'pad ' + pad);
                });
                // checked with Node: createHash('sha256').update('x'.repeat(8191) + '😀').digest('hex')
                assert.equal(hex('sha256', 'x'.repeat(8191) + '😀'), '0d304e34a349502f82f546a44cdb2a794514474fa6519352209f1d47c596f05a');
        });

        test('update accepts every ArrayBufferView, an ArrayBuffer, and views at an offset', function () {
                var want = hex('sha256', new Uint8Array([1, 0, 2, 0, 3, 0, 4, 0]));
                var u16 = new Uint16Array([1, 2, 3, 4]);  // little-endian host
                assert.equal(hex('sha256', u16), want, 'Uint16Array');
                assert.equal(hex('sha256', new DataView(u16.buffer)), want, 'DataView');
                assert.equal(hex('sha256', u16.buffer), want, 'ArrayBuffer');
                assert.equal(hex('sha256', new Uint32Array(u16.buffer)), want, 'Uint32Array');
                var big = new Uint8Array(20);
                big.set([1, 0, 2, 0, 3, 0, 4, 0], 5);
                assert.equal(hex('sha256', big.subarray(5, 13)), want, 'subarray');
                assert.equal(hex('sha256', new DataView(big.buffer, 5, 8)), want, 'DataView at an offset');
                assert.equal(hex('sha256', new Uint8ClampedArray([1, 0, 2, 0, 3, 0, 4, 0])), want, 'Uint8ClampedArray');
        });

        test('update input encodings', function () {
                var abc = VECTORS.sha1[1];
                assert.equal(hex('sha1', '616263', 'hex'), abc);
                assert.equal(hex('sha1', '616263', 'HEX'), abc, 'case-insensitive');
                assert.equal(hex('sha1', 'YWJj', 'base64'), abc);
                assert.equal(hex('sha1', 'YW Jj\n', 'base64'), abc, 'base64 skips whitespace');
                assert.equal(hex('sha1', 'YWJj', 'base64url'), abc);
                assert.equal(hex('sha1', 'abc', 'latin1'), abc);
                assert.equal(hex('sha1', 'abc', 'binary'), abc);
                assert.equal(hex('sha1', 'abc', 'ascii'), abc);
                assert.equal(hex('sha1', 'abc', 'utf-8'), abc);
                assert.equal(hex('sha1', 'abc', 'no-such-encoding'), abc, 'unknown input encoding is UTF-8, as in Node');
                assert.equal(hex('sha1', '\u00e9', 'latin1'), hex('sha1', new Uint8Array([0xe9])));
                assert.equal(hex('sha1', '\u0161', 'latin1'), hex('sha1', new Uint8Array([0x61])), 'latin1 keeps the low byte');
                assert.equal(hex('sha1', 'a\u20ac', 'utf16le'), hex('sha1', new Uint8Array([0x61, 0, 0xac, 0x20])));
                assert.equal(hex('sha1', 'a\u20ac', 'ucs2'), hex('sha1', new Uint8Array([0x61, 0, 0xac, 0x20])));
                assert.equal(hex('sha1', '\u00e9'), hex('sha1', new Uint8Array([0xc3, 0xa9])), 'default UTF-8');
                // Node: Buffer.from('abzz', 'hex') stops at the first bad pair
                assert.equal(hex('sha1', 'abzz', 'hex'), 'fe83f217d464f6fdfa5b2b1f87fe3a1a47371196');
                assert.equal(hex('sha1', '-_8', 'base64'), hex('sha1', new Uint8Array([0xfb, 0xff])), 'base64 takes the URL alphabet too');
                assert.equal(hex('sha1', 'YQ=YQ', 'base64'), hex('sha1', 'a'), 'base64 stops at =');
        });

        test('digest output encodings', function () {
                var d = crypto.createHash('md5').update('abc').digest();
                assert.ok(d instanceof Uint8Array, 'no encoding gives a Uint8Array');
                assert.equal(toHex(d), '900150983cd24fb0d6963f7d28e17f72');
                assert.equal(crypto.createHash('md5').update('abc').digest('buffer').length, 16);
                assert.equal(crypto.createHash('md5').update('abc').digest('Hex'), '900150983cd24fb0d6963f7d28e17f72');
                assert.equal(crypto.createHash('md5').update('abc').digest('base64'), 'kAFQmDzST7DWlj99KOF/cg==');
                assert.equal(crypto.createHash('md5').update('abc').digest('base64url'), 'kAFQmDzST7DWlj99KOF_cg');
                assert.equal(crypto.createHash('sha1').update('abc').digest('base64'), 'qZk+NkcGgWq6PiVxeFDCbJzQ2J0=');
                assert.equal(crypto.createHash('sha256').update('abc').digest('base64url'), 'ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
                var bin = crypto.createHash('md5').update('abc').digest('latin1');
                assert.equal(bin.length, 16);
                assert.equal(bin.charCodeAt(0), 0x90);
                assert.equal(bin.charCodeAt(15), 0x72);
                assert.equal(crypto.createHash('md5').update('abc').digest('binary'), bin);
                // expected strings from Node 20
                assert.equal(crypto.createHash('sha1').update('ab').digest('ascii'),
                        'Z#aN\u0002F\u001a\u000d|{Q=+\u005c\u001cGK\u0019\u0004\u005c');
                var asc = crypto.createHash('md5').update('abc').digest('ascii');
                for (var i = 0; i < 16; i++) assert.equal(asc.charCodeAt(i), d[i] & 0x7f, 'ascii byte ' + i);
                assert.equal(crypto.createHash('md5').update('abc').digest('utf16le'), '\u0190\u9850\ud23c\ub04f\u96d6\u7d3f\ue128\u727f');
                assert.equal(crypto.createHash('md5').update('abc').digest('ucs2'), '\u0190\u9850\ud23c\ub04f\u96d6\u7d3f\ue128\u727f');
                assert.equal(crypto.createHash('sha1').update('ab').digest('utf8'),
                        '\ufffd#aN\u0002F\ufffd\u000d|{\u047d\ufffd\u005c\ufffdGK\u0019\u0004\ufffd');
                assert.ok(crypto.createHash('md5').update('abc').digest('no-such-encoding') instanceof Uint8Array,
                        'an unknown output encoding gives bytes, as Node gives a Buffer');
        });

        test('the digest Uint8Array owns a buffer of exactly its size', function () {
                var d = crypto.createHash('sha384').update('abc').digest();
                assert.equal(d.length, 48);
                assert.equal(d.byteOffset, 0);
                assert.equal(d.buffer.byteLength, 48);
        });

        test('update is chainable; algorithm names are case-insensitive', function () {
                var h = crypto.createHash('SHA256');
                assert.equal(h.update('a'), h);
                assert.equal(h.update('bc').digest('hex'), VECTORS.sha256[1]);
                assert.equal(hex('Md5', 'abc'), VECTORS.md5[1]);
                assert.equal(hex('SHA512', 'abc'), VECTORS.sha512[1]);
        });

        test('copy() forks the running state', function () {
                ALGS.forEach(function (alg) {
                        var h = crypto.createHash(alg).update('a'.repeat(100)).update('b');
                        var c = h.copy();
                        c.update('c');
                        var c2 = c.copy();
                        assert.equal(h.digest('hex'), hex(alg, 'a'.repeat(100) + 'b'), alg + ' original');
                        assert.equal(c.digest('hex'), hex(alg, 'a'.repeat(100) + 'bc'), alg + ' copy');
                        assert.equal(c2.update('d').digest('hex'), hex(alg, 'a'.repeat(100) + 'bcd'), alg + ' copy of copy');
                });
        });

        test('update, digest and copy after digest throw ERR_CRYPTO_HASH_FINALIZED', function () {
                var h = crypto.createHash('sha1');
                h.digest();
                var e = assert.throws(function () { h.update('a'); }, { name: 'Error', code: 'ERR_CRYPTO_HASH_FINALIZED', message: 'Digest already called' });
                assert.ok(e instanceof Error);
                assert.throws(function () { h.digest('hex'); }, { code: 'ERR_CRYPTO_HASH_FINALIZED' });
                assert.throws(function () { h.copy(); }, { code: 'ERR_CRYPTO_HASH_FINALIZED' });
        });

        test('Node accepts the WebCrypto and OpenSSL spellings too', function () {
                var want = crypto.createHash('sha256').update('abc').digest('hex');
                ['sha-256', 'SHA-256', 'RSA-SHA256'].forEach(function (a) {
                        assert.equal(crypto.createHash(a).update('abc').digest('hex'), want, a);
                });
                assert.equal(crypto.createHash('SHA-1').update('abc').digest('hex'), 'a9993e364706816aba3e25717850c26c9cd0d89d');
        });

        test('unknown algorithms: Digest method not supported', function () {
                ['sha3-256', 'sha-2560', 'SHA_1', 'md4', 'ripemd160', '', 'sha256 '].forEach(function (a) {
                        assert.throws(function () { crypto.createHash(a); }, { name: 'Error', message: 'Digest method not supported' }, a);
                });
                assert.throws(function () { crypto.createHash(5); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "algorithm" argument must be of type string. Received type number (5)' });
                assert.throws(function () { crypto.createHash(); }, { code: 'ERR_INVALID_ARG_TYPE' });
        });

        test('update rejects what is neither a string nor bytes', function () {
                var h = crypto.createHash('sha256');
                assert.throws(function () { h.update(1); }, { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE',
                        message: 'The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView. Received type number (1)' });
                assert.throws(function () { h.update(null); }, /Received null$/);
                assert.throws(function () { h.update({}); }, /Received an instance of Object$/);
                assert.throws(function () { h.update([1, 2]); }, /Received an instance of Array$/);
                assert.throws(function () { h.update(); }, /Received undefined$/);
                assert.equal(h.digest('hex'), VECTORS.sha256[0], 'failed updates leave the state alone');
        });

        test('odd-length hex input throws ERR_INVALID_ARG_VALUE, as in Node', function () {
                assert.throws(function () { crypto.createHash('sha1').update('abc', 'hex'); }, { name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE',
                        message: "The argument 'encoding' is invalid for data of length 3. Received 'hex'" });
        });

        test('crypto.hash one-shot (Node 21.7+)', function () {
                assert.equal(crypto.hash('sha1', 'abc'), VECTORS.sha1[1], 'default hex');
                assert.equal(crypto.hash('SHA256', new Uint8Array([0x61, 0x62, 0x63])), VECTORS.sha256[1]);
                assert.equal(crypto.hash('md5', 'abc', 'base64'), 'kAFQmDzST7DWlj99KOF/cg==');
                var b = crypto.hash('sha1', 'a', 'buffer');
                assert.ok(b instanceof Uint8Array);
                assert.equal(toHex(b), '86f7e437faa5a7fce15d1ddcb9eaeaea377667b8');
                assert.throws(function () { crypto.hash('sha1', 'a', 'bogus'); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE', message: "The argument 'outputEncoding' is invalid. Received 'bogus'" });
                assert.throws(function () { crypto.hash('sha1', 5); }, { code: 'ERR_INVALID_ARG_TYPE',
                        message: 'The "input" argument must be of type string or an instance of Buffer, TypedArray, or DataView. Received type number (5)' });
                assert.throws(function () { crypto.hash(5, 'a'); }, { code: 'ERR_INVALID_ARG_TYPE', message: 'The "algorithm" argument must be of type string. Received type number (5)' });
                assert.throws(function () { crypto.hash('foo', 'a'); }, { name: 'Error', message: 'Digest method foo is not supported' });
        });

        test('getHashes lists the supported algorithms, a fresh array each time', function () {
                var h = crypto.getHashes();
                assert.deepEqual(h, ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512']);
                h.push('x');
                assert.equal(crypto.getHashes().length, 6);
                crypto.getHashes().forEach(function (a) { crypto.createHash(a).digest(); });
        });

        test('hashing survives agent code replacing intrinsics', function () {
                var saved = {
                        cca: String.prototype.charCodeAt, lower: String.prototype.toLowerCase,
                        set: Uint8Array.prototype.set, sub: Uint8Array.prototype.subarray,
                        buf: Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'buffer'),
                        apply: Function.prototype.apply, call: Function.prototype.call,
                        hasOwn: Object.prototype.hasOwnProperty,
                };
                var got;
                try {
                        String.prototype.charCodeAt = function () { return 0; };
                        String.prototype.toLowerCase = function () { return 'nope'; };
                        Uint8Array.prototype.set = Uint8Array.prototype.subarray = function () { throw new Error('patched'); };
                        Object.defineProperty(Object.getPrototypeOf(Uint8Array.prototype), 'buffer', { get: function () { throw new Error('patched'); }, configurable: true });
                        Function.prototype.apply = Function.prototype.call = function () { throw new Error('patched'); };
                        Object.prototype.hasOwnProperty = function () { return false; };
                        got = [crypto.createHash('SHA256').update('h\u00e9llo').update('616263', 'hex').digest('hex'),
                                crypto.createHmac('sha1', 'key').update('x').digest('base64')];
                } finally {
                        String.prototype.charCodeAt = saved.cca;
                        String.prototype.toLowerCase = saved.lower;
                        Uint8Array.prototype.set = saved.set;
                        Uint8Array.prototype.subarray = saved.sub;
                        Object.defineProperty(Object.getPrototypeOf(Uint8Array.prototype), 'buffer', saved.buf);
                        Function.prototype.apply = saved.apply;
                        Function.prototype.call = saved.call;
                        Object.prototype.hasOwnProperty = saved.hasOwn;
                }
                assert.equal(got[0], hex('sha256', 'h\u00e9lloabc'));
                assert.equal(got[1], crypto.createHmac('sha1', 'key').update('x').digest('base64'));
        });

        // Here the JIT is already warm from the tests above.  Cold, as the first
        // call in a fresh jsrun, 1 MiB took md5 30-70 ms, sha1 16-40 ms,
        // sha256 16-36 ms, sha512 44-80 ms (see docs/crypto.md).
        test('1 MiB hashes in well under a second (timings printed as comments)', function () {
                var mib = randomBytes(1 << 20, 99), line = [];
                ALGS.forEach(function (alg) {
                        var t0 = Date.now();
                        crypto.createHash(alg).update(mib).digest();
                        var ms = Date.now() - t0;
                        line.push(alg + ' ' + ms + ' ms');
                        assert.ok(ms < 500, alg + ' took ' + ms + ' ms');
                });
                var s = 'a\u00e9\u20ac'.repeat(1 << 18), t0 = Date.now();  // 1.5 MiB of UTF-8
                crypto.createHash('sha256').update(s).digest();
                line.push('sha256 of a 768 Ki-unit string ' + (Date.now() - t0) + ' ms');
                print('# 1 MiB, warm: ' + line.join(', '));
        });
})();
