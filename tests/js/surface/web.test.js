// The hand-written parts of the Node/Web surface: EventTarget/Event/CustomEvent
// (engine/node/events-web.js) and Blob/File/FormData (engine/node/blob.js),
// as bundled (build/gen/node/webEvents.js, blob.js).  Run by make test:
//   build/jsrun tests/js/surface/load.js build/gen/node/webEvents.js build/gen/node/blob.js tests/js/surface/web.test.js
// (load.js captures each part's __chidoriNodePart as it is defined.)
(function () {
'use strict';
var parts = globalThis.__surfaceParts;
var W = parts.webEvents, B = parts.blob;
var EventTarget = W.EventTarget, Event = W.Event, CustomEvent = W.CustomEvent;
var Blob = B.Blob, File = B.File, FormData = B.FormData;

test('Event: init dictionary, phases, toStringTag, required type', function () {
        var e = new Event('x', { bubbles: true, cancelable: true });
        assert.equal(e.type, 'x');
        assert.equal(e.bubbles, true);
        assert.equal(e.cancelable, true);
        assert.equal(e.eventPhase, Event.NONE);
        assert.equal(e.target, null);
        assert.equal(Object.prototype.toString.call(e), '[object Event]');
        assert.throws(function () { new Event(); }, TypeError);
        assert.throws(function () { new Event('x', 5); }, TypeError);
        assert.throws(function () { Event.prototype.type; }, TypeError);
});

test('EventTarget: order, duplicates, once, removal during dispatch, handleEvent', function () {
        var t = new EventTarget(), log = [];
        function a() { log.push('a'); t.removeEventListener('e', b); }
        function b() { log.push('b'); }
        t.addEventListener('e', a);
        t.addEventListener('e', b);
        t.addEventListener('e', a);
        t.addEventListener('e', { handleEvent: function (ev) { log.push('obj:' + ev.type); } }, { once: true });
        t.addEventListener('e', null);
        t.dispatchEvent(new Event('e'));
        t.dispatchEvent(new Event('e'));
        assert.deepEqual(log, ['a', 'obj:e', 'a']);
        assert.throws(function () { t.addEventListener('e'); }, TypeError);
        assert.throws(function () { t.dispatchEvent({ type: 'e' }); }, TypeError);
});

test('EventTarget: capture flag keeps two registrations apart; passive ignores preventDefault', function () {
        var t = new EventTarget(), n = 0;
        function f() { n++; }
        t.addEventListener('e', f, true);
        t.addEventListener('e', f, false);
        t.dispatchEvent(new Event('e'));
        assert.equal(n, 2);
        t.removeEventListener('e', f, { capture: true });
        t.dispatchEvent(new Event('e'));
        assert.equal(n, 3);
        var p = new EventTarget();
        p.addEventListener('c', function (e) { e.preventDefault(); }, { passive: true });
        var ev = new Event('c', { cancelable: true });
        assert.equal(p.dispatchEvent(ev), true);
        assert.equal(ev.defaultPrevented, false);
});

test('dispatching an event twice at once throws; the listener sees target and this', function () {
        var t = new EventTarget(), inner, self;
        var ev = new Event('e');
        t.addEventListener('e', function (e) {
                self = this;
                assert.equal(e.target, t);
                assert.equal(e.currentTarget, t);
                assert.equal(e.eventPhase, Event.AT_TARGET);
                try { t.dispatchEvent(e); } catch (x) { inner = x; }
        });
        t.dispatchEvent(ev);
        assert.equal(self, t);
        assert.ok(inner, 'nested dispatch threw');
        assert.equal(ev.currentTarget, null);
        assert.equal(ev.eventPhase, 0);
});

test('CustomEvent: detail, default null; a subclass of EventTarget works', function () {
        assert.equal(new CustomEvent('x').detail, null);
        var d = { k: 1 };
        assert.equal(new CustomEvent('x', { detail: d }).detail, d);
        assert.ok(new CustomEvent('x') instanceof Event);
        class Emitter extends EventTarget {}
        var em = new Emitter(), got;
        em.addEventListener('y', function (e) { got = e.detail; });
        em.dispatchEvent(new CustomEvent('y', { detail: 7 }));
        assert.equal(got, 7);
});

test('Blob: parts, type lower-cased, bad type dropped, slice with negatives', function () {
        var b = new Blob(['ab', new Uint8Array([99]), new Blob(['d']), new Uint16Array([0x6665]).buffer], { type: 'TEXT/Plain' });
        assert.equal(b.size, 6);
        assert.equal(b.type, 'text/plain');
        assert.equal(new Blob([], { type: 'a\u00e9' }).type, '');
        assert.equal(b.slice(-3, -1).size, 2);
        assert.equal(b.slice(4, 2).size, 0);
        assert.equal(b.slice(0, 100, 'x/y').type, 'x/y');
        assert.throws(function () { new Blob('abc'); }, TypeError);
        assert.throws(function () { new Blob([], { endings: 'bad' }); }, TypeError);
        return b.text().then(function (t) { assert.equal(t, 'abcdef'); });
});

test('Blob: a part copied when made; endings native', function () {
        var u = new Uint8Array([1, 2]);
        var b = new Blob([u]);
        u[0] = 9;
        return Promise.all([b.bytes(), new Blob(['a\r\nb\rc'], { endings: 'native' }).text()]).then(function (r) {
                assert.deepEqual(Array.from(r[0]), [1, 2]);
                assert.equal(r[1], 'a\nb\nc');
        });
});

test('File: name and lastModified required and kept; is a Blob', function () {
        var f = new File(['x'], 'a.txt', { type: 'text/plain', lastModified: 5 });
        assert.equal(f.name, 'a.txt');
        assert.equal(f.lastModified, 5);
        assert.ok(f instanceof Blob);
        assert.throws(function () { new File(['x']); }, TypeError);
});

test('FormData: append/set/get/getAll/has/delete, Blob entries become Files', function () {
        var fd = new FormData();
        fd.append('a', 1);
        fd.append('b', new Blob(['z']));
        fd.append('a', '2');
        fd.append('c', new File(['q'], 'orig.bin'), 'renamed.bin');
        assert.deepEqual(fd.getAll('a'), ['1', '2']);
        assert.equal(fd.get('b').name, 'blob');
        assert.equal(fd.get('c').name, 'renamed.bin');
        fd.set('a', 'only');
        assert.deepEqual(Array.from(fd.keys()), ['a', 'b', 'c']);
        fd.delete('b');
        assert.equal(fd.has('b'), false);
        assert.equal(fd.get('nope'), null);
        assert.throws(function () { fd.append('x', 'y', 'name.txt'); }, TypeError);
        assert.throws(function () { new FormData({}); }, TypeError);
});

test('multipart: bodyOf writes RFC 7578, parseForm reads it back', function () {
        var fd = new FormData();
        fd.append('q"n\nl', 'line1\nline2');
        fd.append('f', new File([new Uint8Array([0, 1, 255])], 'a"b.bin', { type: 'application/x-y' }));
        var body = B.bodyOf(fd, function (n) { return '0123456789abcdef0123456789'.slice(0, n); });
        assert.equal(body.type, 'multipart/form-data; boundary=----chidori-formdata-0123456789abcdef01234567');
        var text = '';
        for (var i = 0; i < body.bytes.length; i++) text += String.fromCharCode(body.bytes[i]);
        assert.ok(text.indexOf('Content-Disposition: form-data; name="q%22n%0D%0Al"\r\n\r\nline1\r\nline2\r\n') > 0, text);
        assert.ok(text.indexOf('filename="a%22b.bin"\r\nContent-Type: application/x-y\r\n\r\n') > 0, text);
        var back = B.parseForm(body.bytes, body.type);
        assert.equal(back.get('q%22n%0D%0Al'), 'line1\r\nline2');
        assert.equal(back.get('f').name, 'a%22b.bin');
        assert.equal(back.get('f').type, 'application/x-y');
        assert.equal(back.get('f').size, 3);
        assert.equal(B.bodyOf({}, null), null);
        assert.throws(function () { B.parseForm(body.bytes, 'text/plain'); }, TypeError);
        assert.throws(function () { B.parseForm(new Uint8Array([65]), 'multipart/form-data; boundary=x'); }, TypeError);
});
})();
