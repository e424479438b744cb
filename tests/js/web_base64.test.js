// atob / btoa (forgiving-base64). Expected values checked against Node 20.
function invalidChar(fn) {
        var e = assert.throws(fn, { name: 'InvalidCharacterError', code: 5 });
        assert.ok(e instanceof DOMException, 'DOMException');
}

test('btoa encodes binary strings with padding', function () {
        assert.equal(btoa(''), '');
        assert.equal(btoa('a'), 'YQ==');
        assert.equal(btoa('ab'), 'YWI=');
        assert.equal(btoa('abc'), 'YWJj');
        assert.equal(btoa('Hello, World!'), 'SGVsbG8sIFdvcmxkIQ==');
        assert.equal(btoa('\u00ff\u00fe\u00fd'), '//79');
});

test('btoa stringifies its argument', function () {
        assert.equal(btoa(null), 'bnVsbA==');
        assert.equal(btoa(undefined), 'dW5kZWZpbmVk');
        assert.equal(btoa(123), 'MTIz');
});

test('btoa rejects code points above U+00FF', function () {
        invalidChar(function () { btoa('\u0100'); });
        invalidChar(function () { btoa('😀'); });
});

test('atob decodes', function () {
        assert.equal(atob('SGVsbG8sIFdvcmxkIQ=='), 'Hello, World!');
        assert.equal(atob(''), '');
        assert.equal(atob('//79'), '\u00ff\u00fe\u00fd');
        assert.equal(atob('AA=='), '\0');
});

test('atob accepts missing padding', function () {
        assert.equal(atob('YQ'), 'a');
        assert.equal(atob('YWI'), 'ab');
});

test('atob strips ASCII whitespace anywhere', function () {
        assert.equal(atob(' Y Q = = '), 'a');
        assert.equal(atob('YW Jj\n'), 'abc');
        assert.equal(atob('\tY\fW\rJ\nj'), 'abc');
});

test('atob ignores non-zero trailing bits', function () {
        assert.equal(atob('YR=='), 'a');
        assert.equal(atob('YWJ='), 'ab');
});

test('atob rejects bad lengths', function () {
        invalidChar(function () { atob('Y'); });
        invalidChar(function () { atob('YWJjZ'); });
        invalidChar(function () { atob('YQ==='); });
        invalidChar(function () { atob('YQ='); }); // '=' only stripped when length % 4 == 0
        invalidChar(function () { atob('='); });
        invalidChar(function () { atob('=='); });
});

test('atob rejects characters outside the base64 alphabet', function () {
        invalidChar(function () { atob('A-'); });
        invalidChar(function () { atob('ab=c'); });
        invalidChar(function () { atob('YQ\u00a0'); });
        invalidChar(function () { atob('\u0000'); });
        invalidChar(function () { atob('a_b-'); });
});

test('atob/btoa round-trip all byte values', function () {
        var s = '', i;
        for (i = 0; i < 256; i++) s += String.fromCharCode(i);
        assert.equal(atob(btoa(s)), s);
        assert.equal(btoa(s).length, 344);
});

test('atob/btoa require an argument', function () {
        assert.throws(function () { atob(); }, TypeError);
        assert.throws(function () { btoa(); }, TypeError);
});

test('atob handles large input', function () {
        var s = new Array(50001).join('\u00ffab');
        assert.equal(atob(btoa(s)), s);
});
