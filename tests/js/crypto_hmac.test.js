// engine/crypto.js: createHmac.  RFC 4231 (HMAC-SHA-224/256/384/512) and
// RFC 2202 (HMAC-MD5, HMAC-SHA-1) test cases; other values from Node 20.
(function () {
        var crypto = __chidoriInstallCrypto({
                getRandomValues: function () { throw new Error('HMAC must not ask for randomness'); },
                randomUUID: function () { throw new Error('HMAC must not ask for randomness'); },
        }).module;

        function rep(byte, n) { return new Uint8Array(n).fill(byte); }
        function fromHex(s) {
                var b = new Uint8Array(s.length / 2);
                for (var i = 0; i < b.length; i++) b[i] = parseInt(s.substr(2 * i, 2), 16);
                return b;
        }
        function range(a, b) {
                var out = new Uint8Array(b - a + 1);
                for (var i = 0; i < out.length; i++) out[i] = a + i;
                return out;
        }
        function hmac(alg, key, data) { return crypto.createHmac(alg, key).update(data).digest('hex'); }

        // [key, data] for RFC 4231 test cases 1..7
        var RFC4231 = [
                [rep(0x0b, 20), 'Hi There'],
                ['Jefe', 'what do ya want for nothing?'],
                [rep(0xaa, 20), rep(0xdd, 50)],
                [range(1, 25), rep(0xcd, 50)],
                [rep(0x0c, 20), 'Test With Truncation'],
                [rep(0xaa, 131), 'Test Using Larger Than Block-Size Key - Hash Key First'],
                [rep(0xaa, 131), 'This is a test using a larger than block-size key and a larger than block-size data. ' +
                        'The key needs to be hashed before being used by the HMAC algorithm.'],
        ];
        var RFC4231_OUT = {
                sha224: ['896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22', 'a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44',
                        '7fb3cb3588c6c1f6ffa9694d7d6ad2649365b0c1f65d69d1ec8333ea', '6c11506874013cac6a2abc1bb382627cec6a90d86efc012de7afec5a',
                        '0e2aea68a90c8d37c988bcdb9fca6fa8', '95e9a0db962095adaebe9b2d6f0dbce2d499f112f2d2b7273fa6870e',
                        '3a854166ac5d9f023f54d517d0b39dbd946770db9c2b95c9f6f565d1'],
                sha256: ['b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7', '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
                        '773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe', '82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b',
                        'a3b6167473100ee06e0c796c2955552b', '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54',
                        '9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2'],
                sha384: ['afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6',
                        'af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649',
                        '88062608d3e6ad8a0aa2ace014c8a86f0aa635d947ac9febe83ef4e55966144b2a5ab39dc13814b94e3ab6e101a34f27',
                        '3e8a69b7783c25851933ab6290af6ca77a9981480850009cc5577c6e1f573b4e6801dd23c4a7d679ccf8a386c674cffb',
                        '3abf34c3503b2a23a46efc619baef897',
                        '4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c60c2ef6ab4030fe8296248df163f44952',
                        '6617178e941f020d351e2f254e8fd32c602420feb0b8fb9adccebb82461e99c5a678cc31e799176d3860e6110c46523e'],
                sha512: ['87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854',
                        '164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737',
                        'fa73b0089d56a284efb0f0756c890be9b1b5dbdd8ee81a3655f83e33b2279d39bf3e848279a722c806b485a47e67c807b946a337bee8942674278859e13292fb',
                        'b0ba465637458c6990e5a8c5f61d4af7e576d97ff94b872de76f8050361ee3dba91ca5c11aa25eb4d679275cc5788063a5f19741120c4f2de2adebeb10a298dd',
                        '415fad6271580a531d4179bc891d87a6',
                        '80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598',
                        'e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944b6022cac3c4982b10d5eeb55c3e4de15134676fb6de0446065c97440fa8c6a58'],
        };
        ['sha224', 'sha256', 'sha384', 'sha512'].forEach(function (alg) {
                test('RFC 4231 HMAC-' + alg.toUpperCase() + ', test cases 1-7', function () {
                        RFC4231.forEach(function (tc, i) {
                                var want = RFC4231_OUT[alg][i], got = hmac(alg, tc[0], tc[1]);
                                if (i === 4) got = got.slice(0, 32);  // test case 5 is truncated to 128 bits
                                assert.equal(got, want, 'test case ' + (i + 1));
                        });
                });
        });

        var RFC2202_DATA = ['Hi There', 'what do ya want for nothing?', rep(0xdd, 50), rep(0xcd, 50), 'Test With Truncation',
                'Test Using Larger Than Block-Size Key - Hash Key First',
                'Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data'];
        test('RFC 2202 HMAC-MD5, test cases 1-7', function () {
                var keys = [rep(0x0b, 16), 'Jefe', rep(0xaa, 16), range(1, 25), rep(0x0c, 16), rep(0xaa, 80), rep(0xaa, 80)];
                var want = ['9294727a3638bb1c13f48ef8158bfc9d', '750c783e6ab0b503eaa86e310a5db738', '56be34521d144c88dbb8c733f0e8b3f6',
                        '697eaf0aca3a3aea3a75164746ffaa79', '56461ef2342edc00f9bab995690efd4c', '6b1ab7fe4bd7bf8f0b62e6ce61b9d0cd',
                        '6f630fad67cda0ee1fb1f562db3aa53e'];
                keys.forEach(function (k, i) { assert.equal(hmac('md5', k, RFC2202_DATA[i]), want[i], 'test case ' + (i + 1)); });
        });
        test('RFC 2202 HMAC-SHA-1, test cases 1-7', function () {
                var keys = [rep(0x0b, 20), 'Jefe', rep(0xaa, 20), range(1, 25), rep(0x0c, 20), rep(0xaa, 80), rep(0xaa, 80)];
                var want = ['b617318655057264e28bc0b6fb378c8ef146be00', 'effcdf6ae5eb2fa2d27416d5f184df9c259a7c79',
                        '125d7342b9ac11cd91a39af48aa17b4f63f175d3', '4c9007f4026250c6bc8414f9bf50c86c2d7235da',
                        '4c1a03424b55e07fe7f27be1d58bb9324a9a5a04', 'aa4ae5e15272d00e95705637ce8a3b55ed402112',
                        'e8e99d0f45237d786d6bbaa7965c7808bbff1a91'];
                keys.forEach(function (k, i) { assert.equal(hmac('sha1', k, RFC2202_DATA[i]), want[i], 'test case ' + (i + 1)); });
        });

        test('well-known values: the quick brown fox, empty key and message', function () {
                var fox = 'The quick brown fox jumps over the lazy dog';
                assert.equal(hmac('sha256', 'key', fox), 'f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8');
                assert.equal(hmac('md5', 'key', fox), '80070713463e7749b90c2dc24911e275');
                assert.equal(hmac('sha256', '', ''), 'b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad');
                assert.equal(crypto.createHmac('sha256', new Uint8Array(0)).digest('hex'), 'b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad');
        });

        test('keys: strings are UTF-8, any bytes work, options.encoding decodes string keys', function () {
                var want = 'fc397a5e543c0c71e75934f428fc7478ae5fe0495bb2a53313b88f3410cdfa09';
                assert.equal(hmac('sha256', 'k\u00e9y', 'x'), want);
                assert.equal(hmac('sha256', new TextEncoder().encode('k\u00e9y'), 'x'), want);
                assert.equal(hmac('sha256', new TextEncoder().encode('k\u00e9y').buffer, 'x'), want, 'ArrayBuffer');
                assert.equal(hmac('sha256', new DataView(new TextEncoder().encode('k\u00e9y').buffer), 'x'), want, 'DataView');
                var key = crypto.createHmac('sha256', '6b6579', { encoding: 'hex' }).update('x').digest('hex');
                assert.equal(key, '4fc3b7eaf34d7e594a6f51d9517ba543abf41067b27587ffd82ba3584e4d3cdd');
                assert.equal(hmac('sha256', 'key', 'x'), key);
        });

        test('keys longer than the block are hashed first; a block-sized key is not', function () {
                assert.equal(hmac('sha512', 'a'.repeat(128), 'x'), 'b2fd3490e6072206d5543e474fddcdacda9259edebf698ffac1f3a03720e2dccc637abea568e2617df5ffae62ac2313da4031174d135345607e02ef0b05e17e8');
                var long = '0433e12ae78ba15593470cad13567e91810dfbfae5e007f9870bd13d782626cc9f56d2b02f71c6cf4484bec0d859053aa00e3c465d7153765cfbf5882be701f2';
                assert.equal(hmac('sha512', 'a'.repeat(129), 'x'), long);
                assert.equal(hmac('sha512', crypto.createHash('sha512').update('a'.repeat(129)).digest(), 'x'), long);
                ['md5', 'sha1', 'sha256'].forEach(function (alg) {
                        var k = 'k'.repeat(65);
                        assert.equal(hmac(alg, k, 'x'), hmac(alg, crypto.createHash(alg).update(k).digest(), 'x'), alg);
                });
        });

        test('HMAC updates in pieces match one update', function () {
                var data = 'The quick brown fox jumps over the lazy dog, '.repeat(20);
                ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512'].forEach(function (alg) {
                        var want = hmac(alg, 'secret', data);
                        var h = crypto.createHmac(alg, 'secret');
                        for (var i = 0; i < data.length; i += 37) h.update(data.slice(i, i + 37));
                        assert.equal(h.digest('hex'), want, alg);
                });
        });

        test('HMAC digest encodings; update is chainable', function () {
                var h = crypto.createHmac('sha256', 'key');
                assert.equal(h.update('The quick brown fox '), h);
                var d = h.update('jumps over the lazy dog').digest();
                assert.ok(d instanceof Uint8Array);
                assert.equal(d.length, 32);
                assert.equal(d[0], 0xf7);
                assert.equal(crypto.createHmac('sha256', 'key').update('The quick brown fox jumps over the lazy dog').digest('base64'),
                        '97yD9DBThCSxMpjmqm+xQ+9NWaFJRhdZl0edvC0aPNg=');
                assert.equal(crypto.createHmac('sha256', 'key').update('The quick brown fox jumps over the lazy dog').digest('base64url'),
                        '97yD9DBThCSxMpjmqm-xQ-9NWaFJRhdZl0edvC0aPNg');
                assert.equal(crypto.createHmac('SHA1', 'key').update('616263', 'hex').digest('hex'), hmac('sha1', 'key', 'abc'));
        });

        test('a second HMAC digest() returns an empty result, as in Node; update after digest throws', function () {
                var h = crypto.createHmac('sha1', 'k');
                h.digest();
                assert.equal(h.digest(), '');
                assert.equal(h.digest('hex'), '');
                var b = h.digest('buffer');
                assert.ok(b instanceof Uint8Array);
                assert.equal(b.length, 0);
                assert.throws(function () { h.update('a'); }, { name: 'Error', code: 'ERR_CRYPTO_HASH_FINALIZED', message: 'Digest already called' });
        });

        test('HMAC argument errors', function () {
                assert.throws(function () { crypto.createHmac('foo', 'k'); },
                        { name: 'TypeError', code: 'ERR_CRYPTO_INVALID_DIGEST', message: 'Invalid digest: foo' });
                assert.throws(function () { crypto.createHmac('sha-2560', 'k'); }, { code: 'ERR_CRYPTO_INVALID_DIGEST' });
                assert.throws(function () { crypto.createHmac(1, 'k'); },
                        { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "hmac" argument must be of type string. Received type number (1)' });
                var keyMsg = 'The "key" argument must be of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey.';
                assert.throws(function () { crypto.createHmac('sha256', null); }, { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: keyMsg + ' Received null' });
                assert.throws(function () { crypto.createHmac('sha256', 5); }, { message: keyMsg + ' Received type number (5)' });
                assert.throws(function () { crypto.createHmac('sha256'); }, { message: keyMsg + ' Received undefined' });
                assert.throws(function () { crypto.createHmac('sha256', 'k').update(5); }, { code: 'ERR_INVALID_ARG_TYPE' });
        });

        test('an HMAC key is copied at creation', function () {
                var key = new Uint8Array([1, 2, 3]);
                var h = crypto.createHmac('sha256', key);
                key[0] = 9;
                assert.equal(h.update('x').digest('hex'), hmac('sha256', new Uint8Array([1, 2, 3]), 'x'));
        });

        test('RFC 4231 keys given as hex strings with options.encoding', function () {
                assert.equal(crypto.createHmac('sha256', '0b'.repeat(20), { encoding: 'hex' }).update('Hi There').digest('hex'), RFC4231_OUT.sha256[0]);
                assert.equal(hmac('sha256', fromHex('0b'.repeat(20)), 'Hi There'), RFC4231_OUT.sha256[0]);
        });
})();
