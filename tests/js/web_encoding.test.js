// TextEncoder / TextDecoder. Expected values checked against Node 20.
function bytes(a) { return new Uint8Array(a); }
function dec(a, label, opts) { return new TextDecoder(label, opts).decode(bytes(a)); }

test('TextEncoder basics', function () {
        var e = new TextEncoder();
        assert.equal(e.encoding, 'utf-8');
        assert.deepEqual(Array.from(e.encode('aé€😀')), [0x61, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80]);
        assert.ok(e.encode('x') instanceof Uint8Array);
        assert.equal(e.encode().length, 0);
        assert.equal(e.encode('abc').buffer.byteLength, 3, 'buffer is exactly sized');
});

test('TextEncoder replaces lone surrogates with U+FFFD', function () {
        assert.deepEqual(Array.from(new TextEncoder().encode('a\uD800b\uDC00')), [0x61, 0xEF, 0xBF, 0xBD, 0x62, 0xEF, 0xBF, 0xBD]);
        assert.deepEqual(Array.from(new TextEncoder().encode('\uDC00\uD800')), [0xEF, 0xBF, 0xBD, 0xEF, 0xBF, 0xBD]);
});

test('TextEncoder.encodeInto stops before a character that does not fit', function () {
        var u = new Uint8Array(5), r = new TextEncoder().encodeInto('a€😀', u);
        assert.deepEqual([r.read, r.written], [2, 4]);
        assert.deepEqual(Array.from(u), [0x61, 0xE2, 0x82, 0xAC, 0]);
        u = new Uint8Array(8);
        r = new TextEncoder().encodeInto('a€😀', u);
        assert.deepEqual([r.read, r.written], [4, 8], 'surrogate pair counts as two code units read');
});

test('TextEncoder.encodeInto requires a Uint8Array destination', function () {
        assert.throws(function () { new TextEncoder().encodeInto('a', new Uint16Array(2)); }, TypeError);
        assert.throws(function () { new TextEncoder().encodeInto('a', []); }, TypeError);
});

test('TextDecoder defaults and labels', function () {
        var d = new TextDecoder();
        assert.equal(d.encoding, 'utf-8');
        assert.equal(d.fatal, false);
        assert.equal(d.ignoreBOM, false);
        assert.equal(new TextDecoder(' UTF8 ').encoding, 'utf-8');
        assert.equal(new TextDecoder('unicode-1-1-utf-8').encoding, 'utf-8');
        assert.equal(new TextDecoder('utf-16').encoding, 'utf-16le');
        assert.equal(new TextDecoder('latin1').encoding, 'windows-1252');
});

test('TextDecoder rejects unknown labels with RangeError', function () {
        assert.throws(function () { new TextDecoder('foo'); }, RangeError);
        assert.throws(function () { new TextDecoder('utf-32'); }, RangeError);
});

test('TextDecoder decodes valid UTF-8', function () {
        assert.equal(dec([0x61, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80]), 'aé€😀');
        assert.equal(new TextDecoder().decode(), '');
        assert.equal(new TextDecoder().decode(undefined), '');
});

test('TextDecoder replacement follows the maximal-subpart rule', function () {
        assert.equal(dec([0xE2, 0x82]), '\uFFFD');
        assert.equal(dec([0xE0, 0x80, 0x80]), '\uFFFD\uFFFD\uFFFD');
        assert.equal(dec([0xED, 0xA0, 0x80]), '\uFFFD\uFFFD\uFFFD', 'surrogate code points are invalid');
        assert.equal(dec([0xF0, 0x90, 0x80]), '\uFFFD');
        assert.equal(dec([0xF4, 0x90, 0x80, 0x80]), '\uFFFD\uFFFD\uFFFD\uFFFD');
        assert.equal(dec([0xC0, 0xAF]), '\uFFFD\uFFFD', 'overlong');
        assert.equal(dec([0xFF, 0x41]), '\uFFFDA');
        assert.equal(dec([0xE2, 0x41, 0x82, 0xAC]), '\uFFFDA\uFFFD\uFFFD');
        assert.equal(dec([0xF1, 0x80, 0x80, 0xC0]), '\uFFFD\uFFFD');
        assert.equal(dec([0x80, 0x80]), '\uFFFD\uFFFD');
});

test('TextDecoder fatal mode throws TypeError', function () {
        assert.throws(function () { dec([0xC3], 'utf-8', { fatal: true }); }, TypeError);
        assert.throws(function () { dec([0xFF], 'utf-8', { fatal: true }); }, TypeError);
        assert.equal(dec([0xC3, 0xA9], 'utf-8', { fatal: true }), 'é');
});

test('TextDecoder strips a leading BOM unless ignoreBOM', function () {
        assert.equal(dec([0xEF, 0xBB, 0xBF, 0x41]), 'A');
        assert.equal(dec([0xEF, 0xBB, 0xBF, 0x41], 'utf-8', { ignoreBOM: true }), '\uFEFFA');
        assert.equal(dec([0x41, 0xEF, 0xBB, 0xBF]), 'A\uFEFF', 'only a leading BOM is stripped');
});

test('TextDecoder streaming across chunk boundaries', function () {
        var d = new TextDecoder(), b = new TextEncoder().encode('a€😀b'), s = '', i;
        for (i = 0; i < b.length; i++) s += d.decode(b.subarray(i, i + 1), { stream: true });
        assert.equal(s + d.decode(), 'a€😀b');
});

test('TextDecoder flushes an incomplete sequence at end of stream', function () {
        var d = new TextDecoder();
        assert.equal(d.decode(bytes([0xF0, 0x9F]), { stream: true }), '');
        assert.equal(d.decode(), '\uFFFD');
        assert.equal(d.decode(bytes([0x41])), 'A', 'decoder is reset after a flush');
});

test('TextDecoder BOM split across streamed chunks', function () {
        var d = new TextDecoder();
        assert.equal(d.decode(bytes([0xEF, 0xBB]), { stream: true }), '');
        assert.equal(d.decode(bytes([0xBF, 0xEF, 0xBB, 0xBF])), '\uFEFF');
        assert.equal(d.decode(bytes([0xEF, 0xBB, 0xBF, 0x42])), 'B', 'BOM handling restarts on a new stream');
});

test('TextDecoder accepts ArrayBuffer, typed arrays and DataView', function () {
        var d = new TextDecoder();
        assert.equal(d.decode(new Uint16Array([0x6261]).buffer), 'ab');
        assert.equal(d.decode(new DataView(bytes([0x61, 0x62, 0x63]).buffer, 1)), 'bc');
        assert.equal(d.decode(new Uint8Array([0x78, 0x61, 0x62]).subarray(1)), 'ab');
        assert.equal(d.decode(new Int32Array([0x64636261])), 'abcd');
        assert.throws(function () { d.decode('abc'); }, TypeError);
        assert.throws(function () { d.decode([0x61]); }, TypeError);
});

test('TextDecoder utf-16le / utf-16be', function () {
        assert.equal(dec([0xFF, 0xFE, 0x41, 0, 0x3D, 0xD8, 0x00, 0xDE, 0x00, 0xD8, 0x41], 'utf-16le'), 'A😀\uFFFD', 'pending surrogate + odd byte flush as one U+FFFD');
        assert.equal(dec([0xFE, 0xFF, 0, 0x41, 0xD8, 0x3D, 0xDE, 0x00], 'utf-16be'), 'A😀');
        assert.throws(function () { dec([0x00, 0xDC], 'utf-16le', { fatal: true }); }, TypeError);
});

test('TextDecoder windows-1252 maps 0x80-0x9F per the WHATWG index', function () {
        assert.equal(dec([0x41, 0x80, 0x9F, 0xE9, 0xFF], 'latin1'), 'A€Ÿéÿ');
        assert.equal(dec([0xEF, 0xBB, 0xBF], 'ascii'), 'ï»¿', 'no BOM handling');
});

test('TextDecoder handles large inputs', function () {
        var s = new Array(20001).join('héllo 😀 ');
        var b = new TextEncoder().encode(s);
        assert.equal(b.length, 20000 * 12);
        assert.equal(new TextDecoder().decode(b), s);
});

test('encoding classes have web-like shape', function () {
        assert.equal(Object.prototype.toString.call(new TextEncoder()), '[object TextEncoder]');
        assert.equal(Object.prototype.toString.call(new TextDecoder()), '[object TextDecoder]');
        assert.deepEqual(Object.keys(TextEncoder.prototype), ['encoding', 'encode', 'encodeInto']);
        assert.throws(function () { TextDecoder.prototype.decode.call({}); }, TypeError);
        assert.throws(function () { TextEncoder(); }, TypeError);
});
