// engine/fs.js against a parent: under build/jsrun a fake, a small in-memory
// filesystem written here in JS with the semantics and messages of
// effects/fs/vfs.c (only as much as these tests need); under build/vfsrun
// (tests/js/vfsrun.c) the real effects/fs/vfs.c.  The C side has its own tests
// in tests/unit/test_vfs.c.
// Run: build/jsrun engine/fs.js tests/js/fs_*.test.js
//      build/vfsrun engine/fs.js tests/js/fs_*.test.js
(function () {
'use strict';
if (typeof __chidoriInstallFs !== 'function') {
        test('fs_api: engine/fs.js is loaded (build/jsrun engine/fs.js tests/js/fs_*.test.js)', function () {
                throw new Error('__chidoriInstallFs is not defined: run jsrun with engine/fs.js first');
        });
        return;
}
var install = __chidoriInstallFs;

var DESC = {
        ENOENT: 'no such file or directory', EEXIST: 'file already exists', ENOTDIR: 'not a directory',
        EISDIR: 'illegal operation on a directory', ENOTEMPTY: 'directory not empty', EINVAL: 'invalid argument',
        EBUSY: 'resource busy or locked', EACCES: 'permission denied', ENOSPC: 'no space left on device',
};
// What the prelude's hostError makes of a result {ok:false, error:{name, message, code}}.
function hostErr(code, syscall, path, dest) {
        var e = new Error(code + ': ' + DESC[code] + ', ' + syscall + " '" + path + "'" + (dest !== undefined ? " -> '" + dest + "'" : ''));
        Object.defineProperty(e, 'code', { value: code, writable: true, configurable: true });
        return e;
}

function b64(bytes) {
        var s = '';
        for (var i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
        return btoa(s);
}
function unb64(s) {
        var t = atob(s), b = new Uint8Array(t.length);
        for (var i = 0; i < t.length; i++) b[i] = t.charCodeAt(i);
        return b;
}

// A fake parent.  opts.async: 'fifo' (default) answers calls in order,
// 'lifo' in reverse order (results may arrive out of order).
function fakeHost(opts) {
        opts = opts || {};
        var nodes = new Map([['/', { type: 'dir', mode: 0o755 }], ['/tmp', { type: 'dir', mode: 0o1777 }]]);
        var clock = 0, ino = 10;
        var log = [];
        function parse(p) {
                var parts = [], segs = p.split('/');
                segs.forEach(function (c) {
                        if (c === '' || c === '.') return;
                        if (c === '..') { parts.pop(); return; }
                        parts.push(c);
                });
                var last = segs[segs.length - 1];
                return { norm: '/' + parts.join('/'), parts: parts, dirOnly: last === '' || last === '.' || last === '..' };
        }
        function parentOf(n) { return n === '/' ? null : n.slice(0, n.lastIndexOf('/')) || '/'; }
        function kids(n) {
                var pre = n === '/' ? '/' : n + '/', out = [];
                nodes.forEach(function (v, k) { if (k !== n && k.indexOf(pre) === 0 && k.indexOf('/', pre.length) === -1) out.push(k.slice(pre.length)); });
                return out.sort();
        }
        // Checks every component but the last; returns the parsed path.
        function walk(p, sys, raw, dest) {
                var q = parse(p);
                if (p === '') throw hostErr('ENOENT', sys, raw, dest);
                var cur = '';
                for (var i = 0; i + 1 < q.parts.length; i++) {
                        cur += '/' + q.parts[i];
                        var n = nodes.get(cur);
                        if (!n) throw hostErr('ENOENT', sys, raw, dest);
                        if (n.type !== 'dir') throw hostErr('ENOTDIR', sys, raw, dest);
                }
                return q;
        }
        function existing(p, sys, dest) {
                var q = walk(p, sys, p, dest), n = nodes.get(q.norm);
                if (!n) throw hostErr('ENOENT', sys, p, dest);
                if (n.type === 'file' && q.dirOnly) throw hostErr('ENOTDIR', sys, p, dest);
                return { q: q, n: n };
        }
        function put(p, bytes, append, excl, mode, sys) {
                var q = walk(p, sys, p), n = nodes.get(q.norm);
                if (q.norm === '/' || (n && n.type === 'dir')) throw hostErr('EISDIR', sys, p);
                if (n && excl) throw hostErr('EEXIST', sys, p);
                if (!n && q.dirOnly) throw hostErr('EISDIR', sys, p);
                if (!n) {
                        n = { type: 'file', mode: (mode || 0o666) & ~0o22, data: new Uint8Array(0), birth: clock + 1, ino: ino++ };
                        nodes.set(q.norm, n);
                }
                if (append) {
                        var d = new Uint8Array(n.data.length + bytes.length);
                        d.set(n.data);
                        d.set(bytes, n.data.length);
                        n.data = d;
                } else {
                        n.data = bytes.slice();
                }
                n.mtime = ++clock;
        }
        var ops = {
                readFile: function (a) {
                        var e = existing(a.path, 'open');
                        if (e.n.type === 'dir') throw hostErr('EISDIR', 'read', a.path);
                        return { data_base64: b64(e.n.data) };
                },
                writeFile: function (a) {
                        var f = a.flag || 'w';
                        put(a.path, unb64(a.data_base64), f[0] === 'a', f.indexOf('x') >= 0, a.mode, 'open');
                        return null;
                },
                appendFile: function (a) {
                        var f = a.flag || 'a';
                        put(a.path, unb64(a.data_base64), f[0] === 'a', f.indexOf('x') >= 0, a.mode, 'open');
                        return null;
                },
                exists: function (a) {
                        try { existing(a.path, 'access'); return true; } catch (e) { return false; }
                },
                access: function (a) {
                        var e = existing(a.path, 'access');
                        if ((a.mode || 0) & ~(e.n.mode >> 6) & 7) throw hostErr('EACCES', 'access', a.path);
                        return null;
                },
                mkdir: function (a) {
                        var q = walk(a.recursive ? '/' : a.path, 'mkdir', a.path), cur = '', first = null;
                        q = parse(a.path);
                        for (var i = 0; i < q.parts.length; i++) {
                                cur += '/' + q.parts[i];
                                var n = nodes.get(cur);
                                if (n && n.type !== 'dir') throw hostErr(i + 1 === q.parts.length ? 'EEXIST' : 'ENOTDIR', 'mkdir', a.path);
                                if (!n) {
                                        if (!a.recursive && i + 1 < q.parts.length) throw hostErr('ENOENT', 'mkdir', a.path);
                                        nodes.set(cur, { type: 'dir', mode: (a.mode === undefined ? 0o777 : a.mode) & ~0o22, mtime: clock + 1, ino: ino++ });
                                        if (first === null) first = cur;
                                }
                        }
                        if (first === null && !a.recursive) throw hostErr('EEXIST', 'mkdir', a.path);
                        if (first !== null) clock++;
                        return a.recursive ? first : null;
                },
                readdir: function (a) {
                        var e = existing(a.path, 'scandir');
                        if (e.n.type !== 'dir') throw hostErr('ENOTDIR', 'scandir', a.path);
                        return kids(e.q.norm).map(function (k) {
                                var t = nodes.get((e.q.norm === '/' ? '' : e.q.norm) + '/' + k).type;
                                return a.withFileTypes ? { name: k, type: t } : k;
                        });
                },
                stat: function (a, sys) {
                        var n = existing(a.path, sys || 'stat').n;
                        return {
                                type: n.type, size: n.data ? n.data.length : 0, mode: (n.type === 'dir' ? 0o40000 : 0o100000) | n.mode,
                                ino: n.ino || 1, nlink: n.type === 'dir' ? 2 : 1, atimeMs: n.mtime || 0, mtimeMs: n.mtime || 0,
                                ctimeMs: n.mtime || 0, birthtimeMs: n.birth || 0,
                        };
                },
                lstat: function (a) { return ops.stat(a, 'lstat'); },
                unlink: function (a) {
                        var e = existing(a.path, 'unlink');
                        if (e.n.type === 'dir') throw hostErr('EISDIR', 'unlink', a.path);
                        nodes.delete(e.q.norm);
                        return null;
                },
                rmdir: function (a) {
                        var e = existing(a.path, 'rmdir');
                        if (e.n.type !== 'dir') throw hostErr('ENOTDIR', 'rmdir', a.path);
                        if (e.q.norm === '/') throw hostErr('EBUSY', 'rmdir', a.path);
                        if (kids(e.q.norm).length) throw hostErr('ENOTEMPTY', 'rmdir', a.path);
                        nodes.delete(e.q.norm);
                        return null;
                },
                rm: function (a) {
                        var e;
                        try { e = existing(a.path, 'lstat'); } catch (x) { if (a.force) return null; throw x; }
                        if (e.q.norm === '/') throw hostErr('EBUSY', 'rm', a.path);
                        if (e.n.type === 'dir' && !a.recursive) throw hostErr('EISDIR', 'rm', a.path);
                        Array.from(nodes.keys()).forEach(function (k) { if (k === e.q.norm || k.indexOf(e.q.norm + '/') === 0) nodes.delete(k); });
                        return null;
                },
                rename: function (a) {
                        var s = existing(a.from, 'rename', a.to), t = walk(a.to, 'rename', a.from, a.to);
                        if (t.norm === s.q.norm || t.norm.indexOf(s.q.norm + '/') === 0) throw hostErr('EINVAL', 'rename', a.from, a.to);
                        var moved = [];
                        nodes.forEach(function (v, k) { if (k === s.q.norm || k.indexOf(s.q.norm + '/') === 0) moved.push([k, v]); });
                        moved.forEach(function (kv) { nodes.delete(kv[0]); });
                        moved.forEach(function (kv) { nodes.set(t.norm + kv[0].slice(s.q.norm.length), kv[1]); });
                        clock++;
                        return null;
                },
                copyFile: function (a) {
                        var s = existing(a.from, 'copyfile', a.to);
                        if (s.n.type === 'dir') throw hostErr('EISDIR', 'copyfile', a.from, a.to);
                        if (a.flags & 1 && nodes.has(parse(a.to).norm)) throw hostErr('EEXIST', 'copyfile', a.from, a.to);
                        put(a.to, s.n.data, false, false, s.n.mode, 'copyfile');
                        return null;
                },
        };
        function run(op, args) {
                log.push([op, JSON.parse(JSON.stringify(args))]);
                if (opts.deny && opts.deny.indexOf(op) >= 0) {
                        var d = new Error('policy: ' + op + ' is not allowed');
                        d.name = 'PolicyError';
                        Object.defineProperty(d, 'code', { value: 'denied' });
                        throw d;
                }
                if (op.slice(0, 3) !== 'fs.' || !ops[op.slice(3)]) throw new Error('unknown op ' + op);
                // through JSON both ways, as a frame would
                var v = ops[op.slice(3)](JSON.parse(JSON.stringify(args)));
                return v === undefined ? null : JSON.parse(JSON.stringify(v));
        }
        return asyncHost(run, log, opts);
}

// Wraps run(op, args) (value or throw) into the host interface; call()
// answers from a later job, in order or (opts.async 'lifo') reversed.
function asyncHost(run, log, opts) {
        var queue = [];
        var host = {
                log: log,
                callSync: function (op, args) { return run(op, args); },
                call: function (op, args) {
                        var settle, p = new Promise(function (res, rej) { settle = [res, rej]; });
                        var thunk = function () {
                                try { settle[0](run(op, args)); } catch (e) { settle[1](e); }
                        };
                        if (opts.async === 'lifo') {
                                queue.push(thunk);
                                if (queue.length === 1)
                                        Promise.resolve().then(function () { while (queue.length) queue.pop()(); });
                        } else {
                                Promise.resolve().then(thunk);
                        }
                        return p;
                },
        };
        return host;
}

// The real effects/fs/vfs.c through vfsrun's natives, each result turned into a
// value or an Error {message, code} as the prelude's hostError does.
function realHost(opts) {
        opts = opts || {};
        var handle = __vfsNew(), log = [];
        function run(op, args) {
                log.push([op, JSON.parse(JSON.stringify(args))]);
                if (opts.deny && opts.deny.indexOf(op) >= 0) {
                        var d = new Error('policy: ' + op + ' is not allowed');
                        d.name = 'PolicyError';
                        Object.defineProperty(d, 'code', { value: 'denied' });
                        throw d;
                }
                var f = JSON.parse(__vfsCall(handle, op, JSON.stringify(args)));
                if (f.ok) return f.value === undefined ? null : f.value;
                var e = new Error(f.error.message);
                Object.defineProperty(e, 'code', { value: f.error.code, writable: true, configurable: true });
                throw e;
        }
        return asyncHost(run, log, opts);
}

var REAL = typeof __vfsNew === 'function';
var newHost = REAL ? realHost : fakeHost;
print('# fs_api: the parent is ' + (REAL ? 'effects/fs/vfs.c (vfsrun)' : 'a JS fake (jsrun)'));

function fresh(opts) {
        var h = newHost(opts), m = install(h);
        return { host: h, fs: m.fs, promises: m.promises };
}
function bytes(a) { return new Uint8Array(a); }
var enc = new TextEncoder();

// ------------------------------------------------------------------ module shape

test('fs: install gives fs and promises; fs.promises is the promises module', function () {
        var t = fresh();
        assert.equal(typeof t.fs.readFileSync, 'function');
        assert.equal(t.fs.promises, t.promises);
        assert.equal(typeof t.promises.readFile, 'function');
        assert.equal(t.promises.readFileSync, undefined);
        assert.equal(t.fs.constants.COPYFILE_EXCL, 1);
        assert.equal(t.fs.constants.O_APPEND, 1024);
        assert.equal(t.promises.constants, t.fs.constants);
        assert.equal(t.fs.F_OK, 0);
        assert.ok(Object.isFrozen(t.fs.constants));
        var u = fresh();
        assert.notEqual(u.fs, t.fs);
});

test('fs: function names and lengths follow node', function () {
        var fs = fresh().fs;
        assert.equal(fs.readFileSync.name, 'readFileSync');
        assert.equal(fs.readFileSync.length, 2);
        assert.equal(fs.readFile.name, 'readFile');
        assert.equal(fs.readFile.length, 3);
        assert.equal(fs.writeFileSync.length, 3);
        assert.equal(fs.existsSync.length, 1);
        assert.equal(fs.promises.rename.length, 2);
        assert.equal(fs.realpathSync.native, fs.realpathSync);
        assert.ok(Object.keys(fs).indexOf('readFileSync') >= 0);
        assert.ok(Object.keys(fs).indexOf('promises') >= 0);
});

test('fs: the install function is the only global and is hidden', function () {
        var d = Object.getOwnPropertyDescriptor(globalThis, '__chidoriInstallFs');
        assert.deepEqual([d.enumerable, d.configurable], [false, true]);
        ['install', 'fsError', 'toPath', 'B64', 'ERRNO', 'Stats', 'Dirent', 'constants', 'base64Encode', 'OPS'].forEach(function (n) {
                assert.equal(n in globalThis, false, n);
        });
});

// ------------------------------------------------------------------ sync: data

test('fs: readFileSync returns a Uint8Array without an encoding, a string with one', function () {
        var fs = fresh().fs;
        fs.writeFileSync('/tmp/a.txt', 'héllo');
        var b = fs.readFileSync('/tmp/a.txt');
        assert.ok(b instanceof Uint8Array);
        assert.equal(Object.getPrototypeOf(b), Uint8Array.prototype);
        assert.deepEqual(b, bytes([104, 195, 169, 108, 108, 111]));
        assert.equal(fs.readFileSync('/tmp/a.txt', 'utf8'), 'héllo');
        assert.equal(fs.readFileSync('/tmp/a.txt', 'utf-8'), 'héllo');
        assert.equal(fs.readFileSync('/tmp/a.txt', { encoding: 'utf8' }), 'héllo');
        assert.equal(fs.readFileSync('/tmp/a.txt', { encoding: 'UTF8', flag: 'r' }), 'héllo');
        assert.deepEqual(fs.readFileSync('/tmp/a.txt', { encoding: null }), b);
        assert.deepEqual(fs.readFileSync('/tmp/a.txt', {}), b);
});

test('fs: binary bytes round-trip unchanged', function () {
        var fs = fresh().fs, all = new Uint8Array(256);
        for (var i = 0; i < 256; i++) all[i] = i;
        fs.writeFileSync('/bin', all);
        assert.deepEqual(fs.readFileSync('/bin'), all);
        assert.equal(fs.statSync('/bin').size, 256);
});

test('fs: writeFileSync takes any view: the bytes it covers, no more', function () {
        var fs = fresh().fs, buf = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
        fs.writeFileSync('/sub', buf.subarray(2, 5));
        assert.deepEqual(fs.readFileSync('/sub'), bytes([3, 4, 5]));
        fs.writeFileSync('/dv', new DataView(buf.buffer, 6, 2));
        assert.deepEqual(fs.readFileSync('/dv'), bytes([7, 8]));
        fs.writeFileSync('/u16', new Uint16Array([0x0201, 0x0403]));
        assert.deepEqual(fs.readFileSync('/u16'), bytes([1, 2, 3, 4]));
        fs.writeFileSync('/empty', '');
        assert.deepEqual(fs.readFileSync('/empty'), bytes([]));
        assert.equal(fs.readFileSync('/empty', 'utf8'), '');
});

test('fs: strings are written as UTF-8 by default, astral and lone surrogates included', function () {
        var fs = fresh().fs;
        fs.writeFileSync('/e', 'a\u{1F600}b\uD800c');
        assert.deepEqual(fs.readFileSync('/e'), bytes([97, 0xf0, 0x9f, 0x98, 0x80, 98, 0xef, 0xbf, 0xbd, 99]));
        assert.equal(fs.readFileSync('/e', 'utf8'), 'a\u{1F600}b\uFFFDc');
});

test('fs: appendFileSync creates, then appends', function () {
        var fs = fresh().fs;
        fs.appendFileSync('/log', 'one\n');
        fs.appendFileSync('/log', bytes([116, 119, 111, 10]));
        fs.appendFileSync('/log', '74687265650a', 'hex');
        assert.equal(fs.readFileSync('/log', 'utf8'), 'one\ntwo\nthree\n');
        fs.appendFileSync('/log', 'reset', { flag: 'w' });
        assert.equal(fs.readFileSync('/log', 'utf8'), 'reset');
});

test("fs: writeFileSync flag 'wx' fails with EEXIST when the file exists", function () {
        var fs = fresh().fs;
        fs.writeFileSync('/x', '1', { flag: 'wx' });
        var e = assert.throws(function () { fs.writeFileSync('/x', '2', { flag: 'wx' }); },
                { code: 'EEXIST', errno: -17, syscall: 'open', path: '/x' });
        assert.equal(e.message, "EEXIST: file already exists, open '/x'");
        assert.equal(fs.readFileSync('/x', 'utf8'), '1');
        fs.writeFileSync('/x', '3', { flag: 'a' });
        assert.equal(fs.readFileSync('/x', 'utf8'), '13');
});

// ------------------------------------------------------------------ sync: tree

test('fs: existsSync answers, and never throws', function () {
        var fs = fresh().fs;
        fs.writeFileSync('/tmp/f', 'x');
        assert.equal(fs.existsSync('/tmp/f'), true);
        assert.equal(fs.existsSync('/tmp'), true);
        assert.equal(fs.existsSync('/'), true);
        assert.equal(fs.existsSync('/nope'), false);
        assert.equal(fs.existsSync('/tmp/f/'), false);
        assert.equal(fs.existsSync(), false);
        assert.equal(fs.existsSync(42), false);
        assert.equal(fs.existsSync({}), false);
        assert.equal(fs.existsSync('/tmp/f\u0000x'), false);
        assert.equal(fs.existsSync(new URL('file:///tmp/f')), true);
});

test('fs: mkdirSync, plain and recursive', function () {
        var fs = fresh().fs;
        assert.equal(fs.mkdirSync('/a'), undefined);
        assert.throws(function () { fs.mkdirSync('/a'); }, { code: 'EEXIST', syscall: 'mkdir', path: '/a', errno: -17 });
        assert.throws(function () { fs.mkdirSync('/b/c'); }, { code: 'ENOENT', syscall: 'mkdir', path: '/b/c' });
        assert.equal(fs.mkdirSync('/b/c/d', { recursive: true }), '/b');
        assert.equal(fs.mkdirSync('/b/c/d', { recursive: true }), undefined);
        assert.equal(fs.statSync('/b/c/d').isDirectory(), true);
        assert.throws(function () { fs.mkdirSync('/x', { recursive: 1 }); }, { code: 'ERR_INVALID_ARG_TYPE', name: 'TypeError' });
});

test('fs: readdirSync: names, Dirents, recursive', function () {
        var fs = fresh().fs;
        fs.mkdirSync('/d/sub/deeper', { recursive: true });
        fs.writeFileSync('/d/b.txt', '');
        fs.writeFileSync('/d/a.txt', '');
        fs.writeFileSync('/d/sub/c', '');
        assert.deepEqual(fs.readdirSync('/d'), ['a.txt', 'b.txt', 'sub']);
        var ents = fs.readdirSync('/d', { withFileTypes: true });
        assert.equal(ents.length, 3);
        assert.ok(ents[0] instanceof fs.Dirent);
        assert.equal(ents[0].name, 'a.txt');
        assert.equal(ents[0].isFile(), true);
        assert.equal(ents[0].isDirectory(), false);
        assert.equal(ents[2].isDirectory(), true);
        assert.equal(ents[2].isSymbolicLink(), false);
        assert.equal(ents[2].parentPath, '/d');
        assert.deepEqual(fs.readdirSync('/d', { recursive: true }), ['a.txt', 'b.txt', 'sub', 'sub/c', 'sub/deeper']);
        var rec = fs.readdirSync('/d/', { recursive: true, withFileTypes: true });
        assert.deepEqual(rec.map(function (e) { return e.parentPath + ' ' + e.name; }),
                ['/d/ a.txt', '/d/ b.txt', '/d/ sub', '/d/sub c', '/d/sub deeper']);
        assert.throws(function () { fs.readdirSync('/d/a.txt'); }, { code: 'ENOTDIR', syscall: 'scandir', errno: -20 });
        assert.throws(function () { fs.readdirSync('/nope'); }, { code: 'ENOENT', syscall: 'scandir', path: '/nope' });
});

test('fs: statSync gives a Stats object', function () {
        var fs = fresh().fs;
        fs.writeFileSync('/f', 'hello');
        var s = fs.statSync('/f');
        assert.ok(s instanceof fs.Stats);
        assert.equal(s.isFile(), true);
        assert.equal(s.isDirectory(), false);
        assert.equal(s.isSymbolicLink(), false);
        assert.equal(s.isFIFO(), false);
        assert.equal(s.size, 5);
        assert.equal(s.mode, 0o100644);
        assert.equal(typeof s.mtimeMs, 'number');
        assert.ok(s.mtime instanceof Date);
        assert.equal(s.mtime.getTime(), s.mtimeMs);
        assert.equal(s.blocks, 1);
        var d = fs.statSync('/tmp');
        assert.equal(d.isDirectory(), true);
        assert.equal(d.isFile(), false);
        assert.equal(fs.lstatSync('/f').isFile(), true);
        assert.throws(function () { fs.lstatSync('/g'); }, { code: 'ENOENT', syscall: 'lstat' });
});

test('fs: statSync throwIfNoEntry:false and bigint', function () {
        var fs = fresh().fs;
        fs.writeFileSync('/f', 'abc');
        assert.equal(fs.statSync('/nope', { throwIfNoEntry: false }), undefined);
        assert.equal(fs.statSync('/f/x', { throwIfNoEntry: false }), undefined);
        assert.throws(function () { fs.statSync('/nope', { throwIfNoEntry: true }); }, { code: 'ENOENT' });
        var b = fs.statSync('/f', { bigint: true });
        assert.equal(typeof b.size, 'bigint');
        assert.equal(b.size, 3n);
        assert.equal(typeof b.mtimeNs, 'bigint');
        assert.equal(b.isFile(), true);
        assert.ok(b.mtime instanceof Date);
});

test('fs: unlinkSync, rmdirSync, rmSync', function () {
        var fs = fresh().fs;
        fs.writeFileSync('/f', 'x');
        fs.unlinkSync('/f');
        assert.equal(fs.existsSync('/f'), false);
        assert.throws(function () { fs.unlinkSync('/f'); }, { code: 'ENOENT', syscall: 'unlink', path: '/f' });
        assert.throws(function () { fs.unlinkSync('/tmp'); }, { code: 'EISDIR', errno: -21 });
        fs.mkdirSync('/d/e', { recursive: true });
        assert.throws(function () { fs.rmdirSync('/d'); }, { code: 'ENOTEMPTY', errno: -39, syscall: 'rmdir' });
        fs.rmdirSync('/d/e');
        fs.rmdirSync('/d');
        fs.mkdirSync('/r/s/t', { recursive: true });
        fs.writeFileSync('/r/s/t/f', 'x');
        assert.throws(function () { fs.rmSync('/r'); }, { code: 'EISDIR', syscall: 'rm' });
        fs.rmSync('/r', { recursive: true });
        assert.equal(fs.existsSync('/r'), false);
        assert.throws(function () { fs.rmSync('/r'); }, { code: 'ENOENT', syscall: 'lstat', path: '/r' });
        fs.rmSync('/r', { force: true });
        fs.rmSync('/r', { recursive: true, force: true });
        fs.mkdirSync('/q/w', { recursive: true });
        fs.rmdirSync('/q', { recursive: true });  // deprecated form: rm -r
        assert.equal(fs.existsSync('/q'), false);
});

test('fs: renameSync moves; errors carry path and dest', function () {
        var fs = fresh().fs;
        fs.mkdirSync('/a/b', { recursive: true });
        fs.writeFileSync('/a/b/f', 'deep');
        fs.renameSync('/a', '/tmp/z');
        assert.equal(fs.readFileSync('/tmp/z/b/f', 'utf8'), 'deep');
        assert.equal(fs.existsSync('/a'), false);
        var e = assert.throws(function () { fs.renameSync('/nope', '/x'); });
        assert.equal(e.message, "ENOENT: no such file or directory, rename '/nope' -> '/x'");
        assert.deepEqual([e.code, e.errno, e.syscall, e.path, e.dest], ['ENOENT', -2, 'rename', '/nope', '/x']);
        assert.throws(function () { fs.renameSync('/tmp/z', '/tmp/z/inside'); }, { code: 'EINVAL', errno: -22 });
});

test('fs: copyFileSync, with COPYFILE_EXCL', function () {
        var fs = fresh().fs;
        fs.writeFileSync('/a', 'A');
        fs.copyFileSync('/a', '/b');
        fs.writeFileSync('/a', 'changed');
        assert.equal(fs.readFileSync('/b', 'utf8'), 'A');
        assert.throws(function () { fs.copyFileSync('/a', '/b', fs.constants.COPYFILE_EXCL); },
                { code: 'EEXIST', syscall: 'copyfile', path: '/a', dest: '/b' });
        fs.copyFileSync('/a', '/b', fs.constants.COPYFILE_FICLONE);
        assert.equal(fs.readFileSync('/b', 'utf8'), 'changed');
        assert.throws(function () { fs.copyFileSync('/a', '/b', 8); }, { code: 'ERR_OUT_OF_RANGE', name: 'RangeError' });
});

test('fs: accessSync', function () {
        var fs = fresh().fs;
        fs.writeFileSync('/f', 'x');
        assert.equal(fs.accessSync('/f'), undefined);
        fs.accessSync('/f', fs.constants.R_OK | fs.constants.W_OK);
        assert.throws(function () { fs.accessSync('/f', fs.constants.X_OK); }, { code: 'EACCES', errno: -13, syscall: 'access' });
        assert.throws(function () { fs.accessSync('/g'); }, { code: 'ENOENT', syscall: 'access' });
        assert.throws(function () { fs.accessSync('/f', 8); }, { code: 'ERR_OUT_OF_RANGE' });
        assert.throws(function () { fs.accessSync('/f', '4'); }, { code: 'ERR_INVALID_ARG_TYPE' });
});

test('fs: realpathSync normalises like the parent and checks existence', function () {
        var fs = fresh().fs;
        fs.mkdirSync('/a/b', { recursive: true });
        assert.equal(fs.realpathSync('/a/./b/../b/'), '/a/b');
        assert.equal(fs.realpathSync('a//b'), '/a/b');
        assert.equal(fs.realpathSync('/../../a'), '/a');
        assert.equal(fs.realpathSync('/'), '/');
        assert.equal(fs.realpathSync.native('/a'), '/a');
        assert.throws(function () { fs.realpathSync('/a/nope'); }, { code: 'ENOENT', path: '/a/nope' });
});

test('fs: mkdtempSync makes fresh directories with deterministic names', function () {
        var t = fresh(), fs = t.fs;
        var a = fs.mkdtempSync('/tmp/job-'), b = fs.mkdtempSync('/tmp/job-');
        assert.ok(/^\/tmp\/job-[A-Za-z0-9]{6}$/.test(a), a);
        assert.notEqual(a, b);
        assert.equal(fs.statSync(a).isDirectory(), true);
        var u = fresh();
        assert.equal(u.fs.mkdtempSync('/tmp/job-'), a);  // same sequence in a replay
        assert.throws(function () { fs.mkdtempSync('/nope/x-'); }, { code: 'ENOENT' });
});

// ------------------------------------------------------------------ errors

test('fs: errors look like node errors', function () {
        var fs = fresh().fs;
        var e = assert.throws(function () { fs.readFileSync('/missing.txt'); });
        assert.ok(e instanceof Error);
        assert.equal(e.name, 'Error');
        assert.equal(e.message, "ENOENT: no such file or directory, open '/missing.txt'");
        assert.equal(e.code, 'ENOENT');
        assert.equal(e.errno, -2);
        assert.equal(e.syscall, 'open');
        assert.equal(e.path, '/missing.txt');
        assert.equal(e.dest, undefined);
        assert.deepEqual(Object.keys(e), ['errno', 'code', 'syscall', 'path']);
        assert.equal(typeof e.stack, 'string');
        e = assert.throws(function () { fs.readFileSync('/tmp'); });
        assert.deepEqual([e.code, e.syscall, e.errno], ['EISDIR', 'read', -21]);
});

test('fs: the path in errors is the one the agent gave', function () {
        var fs = fresh().fs;
        var e = assert.throws(function () { fs.readFileSync('a/../nope'); });
        assert.equal(e.path, 'a/../nope');
        assert.equal(e.message.split(' (')[0], "ENOENT: no such file or directory, open 'a/../nope'");
        e = assert.throws(function () { fs.readFileSync(new URL('file:///no%20pe')); });
        assert.equal(e.path, '/no pe');
        assert.equal(e.message, "ENOENT: no such file or directory, open '/no pe'", 'an absolute path has no hint');
});

test('fs: a relative path that is not there: the error says how to reach host files', function () {
        var fs = fresh().fs;
        var e = assert.throws(function () { fs.readFileSync('data/input.csv', 'utf8'); });
        assert.equal(e.code, 'ENOENT');
        assert.equal(e.path, 'data/input.csv');
        assert.equal(e.message, "ENOENT: no such file or directory, open 'data/input.csv' (node:fs is the run's own " +
                     'in-memory file system, empty at start; files of the host are reached with ' +
                     'chidori.workspace.read(path) when the run has --workspace DIR)');
        return fs.promises.readFile('notes.txt').then(function () { throw new Error('resolved'); }, function (e2) {
                assert.ok(/chidori\.workspace\.read/.test(e2.message), e2.message);
        });
});

test('fs: an error that is not an fs error (a policy refusal) passes unchanged', function () {
        var t = fresh({ deny: ['fs.writeFile'] });
        var e = assert.throws(function () { t.fs.writeFileSync('/x', 'y'); });
        assert.equal(e.name, 'PolicyError');
        assert.equal(e.code, 'denied');
        assert.equal(e.errno, undefined);
        assert.equal(e.message, 'policy: fs.writeFile is not allowed');
});

// ------------------------------------------------------------------ paths

test('fs: paths may be strings, Uint8Arrays or file: URLs', function () {
        var t = fresh(), fs = t.fs;
        fs.writeFileSync(enc.encode('/tmp/é'), 'bytes path');
        assert.equal(fs.readFileSync('/tmp/é', 'utf8'), 'bytes path');
        assert.equal(fs.readFileSync(new URL('file:///tmp/%C3%A9'), 'utf8'), 'bytes path');
        assert.equal(fs.readFileSync(new URL('file://localhost/tmp/%C3%A9'), 'utf8'), 'bytes path');
        assert.equal(t.host.log[t.host.log.length - 1][1].path, '/tmp/é');
        assert.throws(function () { fs.readFileSync(new URL('http://x/tmp/a')); }, { code: 'ERR_INVALID_URL_SCHEME', name: 'TypeError' });
        assert.throws(function () { fs.readFileSync(new URL('file://host/tmp/a')); }, { code: 'ERR_INVALID_FILE_URL_HOST' });
        assert.throws(function () { fs.readFileSync(new URL('file:///tmp/a%2Fb')); }, { code: 'ERR_INVALID_FILE_URL_PATH' });
        assert.throws(function () { fs.readFileSync(new URL('file:///tmp/a%2fb')); }, { code: 'ERR_INVALID_FILE_URL_PATH' });
});

test('fs: bad path arguments are TypeErrors with node codes', function () {
        var fs = fresh().fs;
        var e = assert.throws(function () { fs.readFileSync(42); }, TypeError);
        assert.equal(e.code, 'ERR_INVALID_ARG_TYPE');
        assert.equal(e.message, 'The "path" argument must be of type string or an instance of Buffer or URL. Received type number (42)');
        e = assert.throws(function () { fs.readFileSync(); }, TypeError);
        assert.equal(e.message, 'The "path" argument must be of type string or an instance of Buffer or URL. Received undefined');
        assert.throws(function () { fs.statSync(null); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.throws(function () { fs.statSync({}); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.throws(function () { fs.statSync(new Uint16Array(2)); }, { code: 'ERR_INVALID_ARG_TYPE' });
        e = assert.throws(function () { fs.writeFileSync('/a\u0000b', 'x'); }, TypeError);
        assert.equal(e.code, 'ERR_INVALID_ARG_VALUE');
        assert.ok(/without null bytes/.test(e.message), e.message);
        assert.throws(function () { fs.renameSync('/a', 7); }, { code: 'ERR_INVALID_ARG_TYPE', message: 'The "newPath" argument must be of type string or an instance of Buffer or URL. Received type number (7)' });
        assert.throws(function () { fs.readFileSync(enc.encode('/a\u0000')); }, { code: 'ERR_INVALID_ARG_VALUE' });
});

// ------------------------------------------------------------------ callback forms

test('fs: callbacks are called later, with (null, value)', function () {
        var fs = fresh().fs, order = [];
        fs.writeFileSync('/f', 'data');
        return new Promise(function (resolve, reject) {
                fs.readFile('/f', 'utf8', function (err, v) {
                        try {
                                order.push('cb');
                                assert.equal(err, null);
                                assert.equal(v, 'data');
                                assert.equal(arguments.length, 2);
                                assert.deepEqual(order, ['after', 'cb']);
                                resolve();
                        } catch (e) { reject(e); }
                });
                order.push('after');
        });
});

test('fs: callback options may be left out; writeFile calls back with (null) only', function () {
        var fs = fresh().fs;
        return new Promise(function (resolve, reject) {
                fs.writeFile('/f', bytes([1, 2]), function (err) {
                        try {
                                assert.equal(err, null);
                                assert.equal(arguments.length, 1);
                        } catch (e) { reject(e); return; }
                        fs.readFile('/f', function (err2, v) {
                                try {
                                        assert.equal(err2, null);
                                        assert.deepEqual(v, bytes([1, 2]));
                                        resolve();
                                } catch (e) { reject(e); }
                        });
                });
        });
});

test('fs: callback errors arrive as the first argument', function () {
        var fs = fresh().fs;
        return new Promise(function (resolve, reject) {
                fs.stat('/nope', function (err, s) {
                        try {
                                assert.ok(err instanceof Error);
                                assert.deepEqual([err.code, err.errno, err.syscall, err.path], ['ENOENT', -2, 'stat', '/nope']);
                                assert.equal(s, undefined);
                                resolve();
                        } catch (e) { reject(e); }
                });
        });
});

test('fs: callback forms throw argument errors synchronously and never call back', function () {
        var fs = fresh().fs, called = false;
        assert.throws(function () { fs.readFile('/f'); }, { code: 'ERR_INVALID_ARG_TYPE', message: 'The "cb" argument must be of type function. Received undefined' });
        assert.throws(function () { fs.readFile('/f', 'utf8'); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.throws(function () { fs.readFile(5, function () { called = true; }); }, { code: 'ERR_INVALID_ARG_TYPE' });
        assert.throws(function () { fs.exists('/f'); }, { code: 'ERR_INVALID_ARG_TYPE' });
        return Promise.resolve().then(function () { assert.equal(called, false); });
});

test('fs: callback mkdir, readdir, rename, unlink, rm, copyFile, access, lstat, realpath', function () {
        var fs = fresh().fs;
        function p(f) {
                var args = Array.prototype.slice.call(arguments, 1);
                return new Promise(function (res, rej) {
                        f.apply(fs, args.concat([function (err, v) { if (err) rej(err); else res(v); }]));
                });
        }
        return p(fs.mkdir, '/a/b', { recursive: true }).then(function (first) {
                assert.equal(first, '/a');
                return p(fs.writeFile, '/a/b/f', 'x');
        }).then(function () {
                return p(fs.readdir, '/a/b');
        }).then(function (names) {
                assert.deepEqual(names, ['f']);
                return p(fs.copyFile, '/a/b/f', '/a/g');
        }).then(function () {
                return p(fs.rename, '/a/g', '/a/h');
        }).then(function () {
                return p(fs.access, '/a/h');
        }).then(function () {
                return p(fs.lstat, '/a/h');
        }).then(function (s) {
                assert.equal(s.isFile(), true);
                return p(fs.realpath, '/a/./h');
        }).then(function (r) {
                assert.equal(r, '/a/h');
                return p(fs.unlink, '/a/h');
        }).then(function () {
                return p(fs.rm, '/a', { recursive: true });
        }).then(function () {
                assert.equal(fs.existsSync('/a'), false);
        });
});

test('fs: fs.exists(path, cb) calls back with a boolean only', function () {
        var fs = fresh().fs, got = [];
        fs.writeFileSync('/f', '');
        return new Promise(function (resolve) {
                fs.exists('/f', function (v) {
                        got.push(v, arguments.length);
                        fs.exists('/g', function (w) {
                                got.push(w);
                                fs.exists(12, function (x) { got.push(x); resolve(); });
                        });
                });
        }).then(function () { assert.deepEqual(got, [true, 1, false, false]); });
});

// ------------------------------------------------------------------ promises

test('fs.promises: resolve with values, reject with node errors', function () {
        var t = fresh(), fsp = t.promises;
        return fsp.writeFile('/p', 'promised').then(function (v) {
                assert.equal(v, undefined);
                return fsp.readFile('/p', 'utf8');
        }).then(function (s) {
                assert.equal(s, 'promised');
                return fsp.readFile('/nope');
        }).then(function () {
                throw new Error('should have rejected');
        }, function (e) {
                assert.ok(e instanceof Error);
                assert.deepEqual([e.code, e.errno, e.syscall, e.path], ['ENOENT', -2, 'open', '/nope']);
        });
});

test('fs.promises: argument errors reject instead of throwing', function () {
        var fsp = fresh().promises, p;
        p = fsp.readFile(42);  // must not throw
        assert.ok(p instanceof Promise);
        return p.then(function () { throw new Error('resolved'); }, function (e) {
                assert.ok(e instanceof TypeError);
                assert.equal(e.code, 'ERR_INVALID_ARG_TYPE');
        });
});

test('fs.promises: a whole workflow with async/await', async function () {
        var fsp = fresh().promises;
        assert.equal(await fsp.mkdir('/w/x', { recursive: true }), '/w');
        await fsp.writeFile('/w/x/a.json', JSON.stringify({ n: 1 }));
        await fsp.appendFile('/w/x/log', 'a');
        await fsp.appendFile('/w/x/log', 'b');
        assert.equal(await fsp.readFile('/w/x/log', { encoding: 'utf8' }), 'ab');
        assert.deepEqual(JSON.parse(await fsp.readFile('/w/x/a.json', 'utf8')), { n: 1 });
        assert.deepEqual(await fsp.readdir('/w/x'), ['a.json', 'log']);
        var ents = await fsp.readdir('/w', { withFileTypes: true });
        assert.equal(ents[0].isDirectory(), true);
        assert.equal((await fsp.stat('/w/x/log')).size, 2);
        assert.equal((await fsp.lstat('/w')).isDirectory(), true);
        await fsp.copyFile('/w/x/log', '/w/log2');
        await fsp.rename('/w/log2', '/w/log3');
        await fsp.access('/w/log3');
        await fsp.unlink('/w/log3');
        await fsp.rm('/w', { recursive: true, force: true });
        await fsp.rm('/w', { recursive: true, force: true });
        try {
                await fsp.rmdir('/w');
                throw new Error('rmdir of a missing dir resolved');
        } catch (e) {
                assert.equal(e.code, 'ENOENT');
        }
        var d = await fsp.mkdtemp('/tmp/p-');
        assert.equal((await fsp.stat(d)).isDirectory(), true);
        assert.equal(await fsp.realpath(d + '/.'), d);
});

test('fs.promises: concurrent calls with answers out of order', function () {
        var t = fresh({ async: 'lifo' }), fsp = t.promises;
        var names = ['a', 'b', 'c', 'd', 'e'];
        return Promise.all(names.map(function (n) { return fsp.writeFile('/tmp/' + n, n + n); })).then(function () {
                return Promise.all(names.map(function (n) { return fsp.readFile('/tmp/' + n, 'utf8'); }));
        }).then(function (vals) {
                assert.deepEqual(vals, ['aa', 'bb', 'cc', 'dd', 'ee']);
                return Promise.all([fsp.stat('/tmp/a'), fsp.readFile('/tmp/zz'), fsp.readdir('/tmp')].map(function (p) {
                        return p.then(function (v) { return ['ok', v]; }, function (e) { return ['err', e.code]; });
                }));
        }).then(function (r) {
                assert.equal(r[0][0], 'ok');
                assert.equal(r[0][1].size, 2);
                assert.deepEqual(r[1], ['err', 'ENOENT']);
                assert.deepEqual(r[2], ['ok', names]);
        });
});

// ------------------------------------------------------------------ robustness

test('fs: agent code replacing intrinsics later does not break fs', function () {
        // The real host (the prelude) captured its own intrinsics: model that
        // by undoing the patches while the fake host runs.
        var genProto = Object.getPrototypeOf(Object.getPrototypeOf((function* () {})()));
        var targets = [
                [Array.prototype, 'push'], [Array.prototype, 'map'], [String.prototype, 'slice'],
                [String.prototype, 'indexOf'], [String.prototype, 'charCodeAt'], [Array.prototype, Symbol.iterator],
                [Uint8Array.prototype, 'subarray'], [Function.prototype, 'apply'], [Function.prototype, 'call'],
                [genProto, 'next'], [genProto, 'throw'], [Promise.prototype, 'then'], [Promise, 'resolve'],
                [TextEncoder.prototype, 'encode'], [TextDecoder.prototype, 'decode'], [Reflect, 'apply'],
        ];
        var saved = targets.map(function (t) { return t[0][t[1]]; });
        var boom = function () { throw new Error('patched intrinsic used'); };
        function patch() {
                for (var i = 0; i < targets.length; i++) targets[i][0][targets[i][1]] = boom;
                Object.prototype.injected = 'x';
        }
        function unpatch() {
                for (var i = 0; i < targets.length; i++) targets[i][0][targets[i][1]] = saved[i];
                delete Object.prototype.injected;
        }
        var inner = newHost(), host = {
                callSync: function (op, args) {
                        unpatch();
                        try { return inner.callSync(op, args); } finally { patch(); }
                },
                call: function () { throw new Error('not used'); },
        };
        var fs = install(host).fs, out, bang = new Uint8Array([33]);
        patch();
        try {
                fs.writeFileSync('/tmp/p', 'safe', 'utf8');
                fs.mkdirSync('/tmp/d/e', { recursive: true });
                fs.appendFileSync('/tmp/p', bang);
                out = [fs.readFileSync('/tmp/p', 'utf8'), fs.readdirSync('/tmp', { recursive: true }).length,
                        fs.statSync('/tmp/p').size, fs.existsSync('/tmp/d/e'), fs.readFileSync('/tmp/p', 'base64')];
                try { fs.readFileSync('/nope'); } catch (e) { out[out.length] = e.code; }
        } finally {
                unpatch();
        }
        assert.deepEqual(out, ['safe!', 3, 5, true, 'c2FmZSE=', 'ENOENT']);
        var sent = inner.log.filter(function (c) { return c[0] === 'fs.writeFile'; })[0][1];
        assert.deepEqual(Object.keys(sent), ['path', 'data_base64']);
});
})();
