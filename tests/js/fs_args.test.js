// engine/fs.js: the exact host calls it sends, argument checking, encodings
// and error shapes, against a host that records calls and answers from a
// script.  Run: build/jsrun engine/fs.js tests/js/fs_*.test.js
(function () {
'use strict';
if (typeof __chidoriInstallFs !== 'function') {
        test('fs_args: engine/fs.js is loaded (build/jsrun engine/fs.js tests/js/fs_*.test.js)', function () {
                throw new Error('__chidoriInstallFs is not defined: run jsrun with engine/fs.js first');
        });
        return;
}
var install = __chidoriInstallFs;

// answer(op, args) gives the value, or throws.  log: [[how, op, args]].
function recorder(answer) {
        var log = [];
        answer = answer || function () { return null; };
        var host = {
                log: log,
                callSync: function (op, args) {
                        log.push(['sync', op, JSON.parse(JSON.stringify(args))]);
                        return answer(op, args);
                },
                call: function (op, args) {
                        log.push(['async', op, JSON.parse(JSON.stringify(args))]);
                        try {
                                return Promise.resolve(answer(op, args));
                        } catch (e) {
                                return Promise.reject(e);
                        }
                },
        };
        var m = install(host);
        return { log: log, fs: m.fs, promises: m.promises, host: host };
}
function sent(r) {
        return r.log.map(function (c) { return [c[1], c[2]]; });
}
function lastArgs(r) {
        return r.log[r.log.length - 1][2];
}
function hostErr(code, message) {
        var e = new Error(message);
        Object.defineProperty(e, 'code', { value: code });
        return e;
}
function reading(b64) {
        return recorder(function (op) { return op === 'fs.readFile' ? { data_base64: b64 } : null; });
}

// ------------------------------------------------------------------ frames

test('fs args: each sync call sends one fs.<op> frame with these args', function () {
        var r = recorder(function (op) {
                if (op === 'fs.readFile') return { data_base64: '' };
                if (op === 'fs.readdir') return [];
                if (op === 'fs.stat' || op === 'fs.lstat') return { type: 'file', size: 0, mode: 0o100644 };
                if (op === 'fs.exists') return true;
                return null;
        }), fs = r.fs;
        fs.readFileSync('/x');
        fs.writeFileSync('/x', 'a');
        fs.appendFileSync('/x', 'a');
        fs.existsSync('/x');
        fs.accessSync('/x');
        fs.mkdirSync('/d');
        fs.readdirSync('/d');
        fs.statSync('/x');
        fs.lstatSync('/x');
        fs.unlinkSync('/x');
        fs.rmdirSync('/d');
        fs.rmSync('/d');
        fs.renameSync('/a', '/b');
        fs.copyFileSync('/a', '/b');
        assert.deepEqual(sent(r), [
                ['fs.readFile', { path: '/x' }],
                ['fs.writeFile', { path: '/x', data_base64: 'YQ==' }],
                ['fs.appendFile', { path: '/x', data_base64: 'YQ==' }],
                ['fs.exists', { path: '/x' }],
                ['fs.access', { path: '/x', mode: 0 }],
                ['fs.mkdir', { path: '/d', recursive: false, mode: 0o777 }],
                ['fs.readdir', { path: '/d', withFileTypes: false }],
                ['fs.stat', { path: '/x' }],
                ['fs.lstat', { path: '/x' }],
                ['fs.unlink', { path: '/x' }],
                ['fs.rmdir', { path: '/d' }],
                ['fs.rm', { path: '/d', recursive: false, force: false }],
                ['fs.rename', { from: '/a', to: '/b' }],
                ['fs.copyFile', { from: '/a', to: '/b', flags: 0 }],
        ]);
        assert.ok(r.log.every(function (c) { return c[0] === 'sync'; }));
});

test('fs args: promise and callback forms use host.call, sync forms host.callSync', function () {
        var r = recorder();
        r.fs.unlinkSync('/a');
        var p = r.promises.unlink('/b');
        r.fs.unlink('/c', function () {});
        assert.deepEqual(r.log.map(function (c) { return c[0] + ' ' + c[2].path; }), ['sync /a', 'async /b', 'async /c']);
        return p;
});

test('fs args: paths are sent as given; the parent normalises', function () {
        var r = recorder();
        ['rel/x', '/a/../../b', '//x/./y/', '', ' '].forEach(function (p) { r.fs.unlinkSync(p); });
        assert.deepEqual(r.log.map(function (c) { return c[2].path; }), ['rel/x', '/a/../../b', '//x/./y/', '', ' ']);
});

test('fs args: a lone surrogate in a path becomes U+FFFD', function () {
        var r = recorder();
        r.fs.unlinkSync('/a\uD800b');
        r.fs.unlinkSync('/\uDC00');
        r.fs.unlinkSync('/\uD83D\uDE00');
        assert.deepEqual(r.log.map(function (c) { return c[2].path; }), ['/a\uFFFDb', '/\uFFFD', '/\uD83D\uDE00']);
});

test('fs args: writeFile mode and flag', function () {
        var r = recorder(), fs = r.fs;
        fs.writeFileSync('/x', 'a', { mode: 0o600 });
        assert.deepEqual(lastArgs(r), { path: '/x', data_base64: 'YQ==', mode: 0o600 });
        fs.writeFileSync('/x', 'a', { mode: '640' });
        assert.equal(lastArgs(r).mode, 0o640);
        fs.writeFileSync('/x', 'a', { mode: 0o100644 });
        assert.equal(lastArgs(r).mode, 0o644);
        fs.writeFileSync('/x', 'a', { flag: 'a' });
        assert.equal(lastArgs(r).flag, 'a');
        fs.writeFileSync('/x', 'a', { flag: 'w+' });
        assert.equal('flag' in lastArgs(r), false);
        fs.writeFileSync('/x', 'a', { flag: 'xw' });
        assert.equal(lastArgs(r).flag, 'wx');
        fs.writeFileSync('/x', 'a', { flag: fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_APPEND | fs.constants.O_EXCL });
        assert.equal(lastArgs(r).flag, 'ax');
        fs.appendFileSync('/x', 'a', { flag: 'w' });
        assert.equal(lastArgs(r).flag, 'w');
        fs.appendFileSync('/x', 'a', { flag: 'a+' });
        assert.equal('flag' in lastArgs(r), false);
        var n = r.log.length;
        assert.throws(function () { fs.writeFileSync('/x', 'a', { flag: 'r+' }); }, { code: 'ERR_INVALID_ARG_VALUE', name: 'TypeError' });
        assert.throws(function () { fs.writeFileSync('/x', 'a', { flag: 'bogus' }); }, { code: 'ERR_INVALID_ARG_VALUE' });
        assert.throws(function () { fs.writeFileSync('/x', 'a', { mode: '8' }); }, { code: 'ERR_INVALID_ARG_VALUE' });
        assert.throws(function () { fs.writeFileSync('/x', 'a', { mode: -1 }); }, { code: 'ERR_OUT_OF_RANGE', name: 'RangeError' });
        assert.throws(function () { fs.writeFileSync('/x', 'a', { mode: 1.5 }); }, { code: 'ERR_OUT_OF_RANGE' });
        assert.throws(function () { fs.writeFileSync('/x', 'a', { mode: true }); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.equal(r.log.length, n, 'nothing sent for bad arguments');
});

test('fs args: mkdir, rm, rmdir, copyFile, access options', function () {
        var r = recorder(function (op) { return op === 'fs.readdir' ? [] : null; }), fs = r.fs;
        fs.mkdirSync('/d', 0o700);
        assert.deepEqual(lastArgs(r), { path: '/d', recursive: false, mode: 0o700 });
        fs.mkdirSync('/d', '755');
        assert.equal(lastArgs(r).mode, 0o755);
        fs.mkdirSync('/d', { recursive: true, mode: 0o750 });
        assert.deepEqual(lastArgs(r), { path: '/d', recursive: true, mode: 0o750 });
        fs.rmSync('/d', { recursive: true, force: true, maxRetries: 3 });
        assert.deepEqual(lastArgs(r), { path: '/d', recursive: true, force: true });
        fs.rmdirSync('/d', { recursive: true });
        assert.deepEqual(sent(r)[r.log.length - 1], ['fs.rm', { path: '/d', recursive: true, force: false }]);
        fs.copyFileSync('/a', '/b', fs.constants.COPYFILE_EXCL | fs.constants.COPYFILE_FICLONE);
        assert.deepEqual(lastArgs(r), { from: '/a', to: '/b', flags: 1 });
        fs.accessSync('/a', fs.constants.W_OK);
        assert.deepEqual(lastArgs(r), { path: '/a', mode: 2 });
        fs.readdirSync('/d', { withFileTypes: 1 });
        assert.deepEqual(lastArgs(r), { path: '/d', withFileTypes: true });
        var n = r.log.length;
        assert.throws(function () { fs.rmSync('/d', { recursive: 'yes' }); }, { code: 'ERR_INVALID_ARG_TYPE', message: 'The "options.recursive" property must be of type boolean. Received type string (\'yes\')' });
        assert.throws(function () { fs.rmSync('/d', { force: 1 }); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.throws(function () { fs.mkdirSync('/d', true); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.throws(function () { fs.copyFileSync('/a', '/b', -1); }, { code: 'ERR_OUT_OF_RANGE' });
        assert.throws(function () { fs.accessSync('/a', 1.5); }, { code: 'ERR_OUT_OF_RANGE' });
        assert.equal(r.log.length, n);
});

test('fs args: options must be a string or an object', function () {
        var r = recorder(), fs = r.fs;
        var e = assert.throws(function () { fs.readFileSync('/x', 5); }, TypeError);
        assert.equal(e.code, 'ERR_INVALID_ARG_TYPE');
        assert.equal(e.message, 'The "options" argument must be one of type string or an instance of Object. Received type number (5)');
        assert.throws(function () { fs.readdirSync('/x', true); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.throws(function () { fs.writeFileSync('/x', 'a', 7); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.equal(r.log.length, 0);
});

test('fs args: data must be a string, TypedArray or DataView', function () {
        var r = recorder(), fs = r.fs;
        var e = assert.throws(function () { fs.writeFileSync('/x', 5); }, TypeError);
        assert.equal(e.code, 'ERR_INVALID_ARG_TYPE');
        assert.equal(e.message, 'The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView. Received type number (5)');
        e = assert.throws(function () { fs.writeFileSync('/x', {}); });
        assert.ok(/Received an instance of Object$/.test(e.message), e.message);
        e = assert.throws(function () { fs.appendFileSync('/x', null); });
        assert.ok(/Received null$/.test(e.message), e.message);
        assert.throws(function () { fs.writeFileSync('/x', new ArrayBuffer(2)); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.throws(function () { fs.writeFileSync('/x'); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.equal(r.log.length, 0);
});

test('fs args: bad encodings are refused before anything is sent', function () {
        var r = recorder(), fs = r.fs;
        var e = assert.throws(function () { fs.readFileSync('/x', 'utf9'); }, TypeError);
        assert.equal(e.code, 'ERR_INVALID_ARG_VALUE');
        assert.equal(e.message, "The argument 'encoding' is invalid encoding. Received 'utf9'");
        assert.throws(function () { fs.readFileSync('/x', { encoding: 5 }); }, { code: 'ERR_INVALID_ARG_VALUE' });
        assert.throws(function () { fs.writeFileSync('/x', 'a', 'klingon'); }, { code: 'ERR_INVALID_ARG_VALUE' });
        assert.throws(function () { fs.readdirSync('/x', 'nope'); }, { code: 'ERR_INVALID_ARG_VALUE' });
        assert.equal(r.log.length, 0);
});

// ------------------------------------------------------------------ encodings

test('fs encodings: strings written in each encoding', function () {
        var r = recorder(), fs = r.fs;
        var cases = [
                ['hi', undefined, 'aGk='],
                ['hi', 'utf8', 'aGk='],
                ['00ff10', 'hex', 'AP8Q'],
                ['00FF1', 'hex', 'AP8='],
                ['01zz02', 'hex', 'AQ=='],
                ['aGVsbG8=', 'base64', 'aGVsbG8='],
                ['aG Vs\nbG8', 'base64', 'aGVsbG8='],
                ['-_8', 'base64url', '+/8='],
                ['+/8=', 'base64url', '+/8='],
                ['é\u0100', 'latin1', '6QA='],
                ['é', 'binary', '6Q=='],
                ['A', 'ascii', 'QQ=='],
                ['A\u20ac', 'utf16le', 'QQCsIA=='],
                ['A\u20ac', 'ucs2', 'QQCsIA=='],
                ['', 'hex', ''],
        ];
        cases.forEach(function (c) {
                fs.writeFileSync('/x', c[0], c[1]);
                assert.equal(lastArgs(r).data_base64, c[2], JSON.stringify(c));
        });
        fs.writeFileSync('/x', 'QQ==', { encoding: 'BASE64' });
        assert.equal(lastArgs(r).data_base64, 'QQ==');
        // the encoding only applies to strings
        fs.writeFileSync('/x', new Uint8Array([1, 2]), 'hex');
        assert.equal(lastArgs(r).data_base64, 'AQI=');
});

test('fs encodings: file bytes read back in each encoding', function () {
        var cases = [
                ['aGVsbG8=', 'hex', '68656c6c6f'],
                ['aGVsbG8=', 'base64', 'aGVsbG8='],
                ['+/8=', 'base64url', '-_8'],
                ['+/8=', 'base64', '+/8='],
                ['6Q==', 'latin1', 'é'],
                ['6Q==', 'ascii', 'i'],
                ['QQCsIEI=', 'utf16le', 'A\u20ac'],
                ['77u/QQ==', 'utf8', '\uFEFFA'],
                ['Yf/igmLwn5iA', 'utf8', 'a\uFFFD\uFFFDb\u{1F600}'],
                ['wIDtoID0kICA4oI=', 'utf8', '\uFFFD'.repeat(10)],
                ['', 'utf8', ''],
                ['', 'hex', ''],
        ];
        cases.forEach(function (c) {
                assert.equal(reading(c[0]).fs.readFileSync('/x', c[1]), c[2], JSON.stringify(c));
        });
        assert.deepEqual(reading('AQI=').fs.readFileSync('/x', 'buffer'), new Uint8Array([1, 2]));
});

test('fs encodings: utf8 agrees with TextEncoder/TextDecoder on every code point class', function () {
        var s = '';
        for (var c = 0; c < 0x11000; c += 0x35) s += String.fromCodePoint(c >= 0xd800 && c < 0xe000 ? c + 0x800 : c);
        s += '\u{10FFFF}\u{1F600}';
        var r = recorder(), fs = r.fs;
        fs.writeFileSync('/x', s);
        var b64 = lastArgs(r).data_base64, bin = atob(b64), bytes = new Uint8Array(bin.length);
        for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
        assert.deepEqual(bytes, new TextEncoder().encode(s));
        assert.equal(reading(b64).fs.readFileSync('/x', 'utf8'), s);
        var junk = new Uint8Array(512);
        for (i = 0; i < junk.length; i++) junk[i] = (i * 73 + 41) & 0xff;
        var jb = '';
        for (i = 0; i < junk.length; i++) jb += String.fromCharCode(junk[i]);
        assert.equal(reading(btoa(jb)).fs.readFileSync('/x', 'utf8'), new TextDecoder('utf-8', { ignoreBOM: true }).decode(junk));
});

test('fs encodings: a 1 MiB binary file goes out and back intact', function () {
        var stored = null;
        var r = recorder(function (op, args) {
                if (op === 'fs.writeFile') { stored = args.data_base64; return null; }
                return { data_base64: stored };
        });
        var big = new Uint8Array(1 << 20);
        for (var i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24;
        r.fs.writeFileSync('/big', big);
        assert.equal(stored.length, 4 * Math.ceil(big.length / 3));
        assert.deepEqual(r.fs.readFileSync('/big'), big);
});

test('fs encodings: readdir names in an encoding, or as bytes', function () {
        var r = recorder(function () { return ['a', 'é']; }), fs = r.fs;
        assert.deepEqual(fs.readdirSync('/d'), ['a', 'é']);
        assert.deepEqual(fs.readdirSync('/d', 'hex'), ['61', 'c3a9']);
        var b = fs.readdirSync('/d', { encoding: 'buffer' });
        assert.deepEqual(b, [new Uint8Array([0x61]), new Uint8Array([0xc3, 0xa9])]);
        r = recorder(function () { return [{ name: 'é', type: 'dir' }]; });
        var d = r.fs.readdirSync('/d', { withFileTypes: true, encoding: 'latin1' });
        assert.equal(d[0].name, '\u00c3\u00a9');
        assert.equal(d[0].isDirectory(), true);
});

// ------------------------------------------------------------------ errors

test('fs errors: errno for every code the parent uses', function () {
        var table = { ENOENT: -2, EEXIST: -17, ENOTDIR: -20, EISDIR: -21, ENOTEMPTY: -39, EINVAL: -22, ENOSPC: -28,
                EFBIG: -27, ENAMETOOLONG: -36, EBUSY: -16, EACCES: -13, ENOSYS: -38, ENOMEM: -12 };
        Object.keys(table).forEach(function (codeName) {
                var r = recorder(function () { throw hostErr(codeName, codeName + ': whatever, stat \'/x\''); });
                var e = assert.throws(function () { r.fs.statSync('/x'); });
                assert.deepEqual([e.code, e.errno, e.syscall, e.path], [codeName, table[codeName], 'stat', '/x'], codeName);
        });
});

test('fs errors: the syscall comes from the message, else from the operation', function () {
        var r = recorder(function () { throw hostErr('EISDIR', "EISDIR: illegal operation on a directory, read '/tmp'"); });
        assert.equal(assert.throws(function () { r.fs.readFileSync('/tmp'); }).syscall, 'read');
        r = recorder(function () { throw hostErr('ENOSPC', 'ENOSPC: no space left on device'); });
        var e = assert.throws(function () { r.fs.writeFileSync('/f', 'x'); });
        assert.deepEqual([e.syscall, e.path, e.message], ['open', '/f', 'ENOSPC: no space left on device']);
        r = recorder(function () { throw hostErr('EFBIG', "EFBIG: file too large, write '/f'"); });
        assert.equal(assert.throws(function () { r.fs.appendFileSync('/f', 'x'); }).syscall, 'write');
});

test('fs errors: unknown codes and plain errors pass through untouched', function () {
        var boom = new RangeError('engine trouble');
        var r = recorder(function () { throw boom; });
        assert.equal(assert.throws(function () { r.fs.statSync('/x'); }), boom);
        var odd = hostErr('EWEIRD', 'EWEIRD: odd, stat \'/x\'');
        r = recorder(function () { throw odd; });
        assert.equal(assert.throws(function () { r.fs.statSync('/x'); }), odd);
        return r.promises.stat('/x').then(function () { throw new Error('resolved'); }, function (e) { assert.equal(e, odd); });
});

test('fs errors: async rejections have the same shape as sync throws', function () {
        var r = recorder(function () { throw hostErr('ENOENT', "ENOENT: no such file or directory, rename '/a' -> '/b'"); });
        return r.promises.rename('/a', '/b').then(function () { throw new Error('resolved'); }, function (e) {
                assert.deepEqual([e.code, e.errno, e.syscall, e.path, e.dest], ['ENOENT', -2, 'rename', '/a', '/b']);
                return new Promise(function (resolve, reject) {
                        r.fs.rename('/a', '/b', function (err) {
                                try {
                                        assert.deepEqual([err.code, err.dest], ['ENOENT', '/b']);
                                        resolve();
                                } catch (x) { reject(x); }
                        });
                });
        });
});

// ------------------------------------------------------------------ host contract

test('fs host: install needs call and callSync', function () {
        assert.throws(function () { install(); }, TypeError);
        assert.throws(function () { install({ call: function () {} }); }, TypeError);
        assert.throws(function () { install({ callSync: function () {}, call: 1 }); }, TypeError);
});

test('fs host: host.call may return a plain value or a thenable', function () {
        var fs1 = install({ callSync: function () {}, call: function () { return { data_base64: 'YQ==' }; } });
        var fs2 = install({ callSync: function () {}, call: function () { return { then: function (res) { res({ data_base64: 'Yg==' }); } }; } });
        return Promise.all([fs1.promises.readFile('/x', 'utf8'), fs2.promises.readFile('/x', 'utf8')]).then(function (v) {
                assert.deepEqual(v, ['a', 'b']);
        });
});

test('fs host: stat values become Stats with logical times', function () {
        var r = recorder(function () {
                return { type: 'dir', size: 0, mode: 0o40755, ino: 7, nlink: 2, atimeMs: 3, mtimeMs: 3, ctimeMs: 4, birthtimeMs: 1 };
        });
        var s = r.fs.statSync('/d');
        assert.equal(s.isDirectory(), true);
        assert.equal(s.isFile(), false);
        assert.deepEqual([s.ino, s.nlink, s.mtimeMs, s.ctimeMs, s.birthtimeMs, s.uid, s.gid, s.blksize],
                [7, 2, 3, 4, 1, 0, 0, 4096]);
        assert.equal(s.mtime.toISOString(), '1970-01-01T00:00:00.003Z');
        assert.equal(s.birthtime.getTime(), 1);
        assert.deepEqual(Object.keys(s).slice(0, 4), ['dev', 'mode', 'nlink', 'uid']);
});

test('fs host: callbacks with optional arguments left out or undefined', function () {
        var r = recorder(function (op) { return op === 'fs.mkdir' ? '/a' : null; }), got = [];
        return new Promise(function (resolve) {
                r.fs.mkdir('/a', undefined, function (err, first) {
                        got.push(err, first);
                        r.fs.writeFile('/a/f', 'x', undefined, function (err2) {
                                got.push(err2);
                                r.fs.copyFile('/a/f', '/a/g', function (err3) {
                                        got.push(err3);
                                        resolve();
                                });
                        });
                });
        }).then(function () {
                assert.deepEqual(got, [null, '/a', null, null]);
                assert.deepEqual(lastArgs(r), { from: '/a/f', to: '/a/g', flags: 0 });
                assert.throws(function () { r.fs.rename('/a', function () {}); }, { code: 'ERR_INVALID_ARG_TYPE' });
        });
});

test('fs host: an exception in a callback goes to host.reportError', function () {
        var reported = [];
        var host = {
                callSync: function () {},
                call: function (op) { return op === 'fs.stat' ? Promise.reject(hostErr('ENOENT', "ENOENT: no such file or directory, stat '/x'")) : Promise.resolve(true); },
                reportError: function (e) { reported.push(e.message); },
        };
        var fs = install(host).fs;
        fs.stat('/x', function () { throw new Error('from stat cb'); });
        fs.unlink('/x', function () { throw new Error('from unlink cb'); });
        fs.exists('/x', function () { throw new Error('from exists cb'); });
        return new Promise(function (r) { setTimeoutLike(r); }).then(function () {
                assert.deepEqual(reported.sort(), ['from exists cb', 'from stat cb', 'from unlink cb']);
        });
});

function setTimeoutLike(f) {
        var p = Promise.resolve();
        for (var i = 0; i < 10; i++) p = p.then(function () {});
        p.then(f);
}
})();
