// engine/node/blob.js — Blob, File (File API) and FormData (XHR Standard),
// and the bodies fetch makes of them: multipart/form-data for FormData.
// Bytes are held in memory; a Blob never changes once made.
'use strict';

const bytesOf = new WeakMap();  // blob -> {bytes: Uint8Array, type}
const enc = new TextEncoder();

function need(n, min, what) {
        if (n < min)
                throw new TypeError(what + ': ' + min + ' argument' + (min > 1 ? 's' : '') + ' required, but only ' + n + ' present.');
}
function partBytes(p, endings) {
        if (p instanceof ArrayBuffer)
                return new Uint8Array(p.slice(0));
        if (ArrayBuffer.isView(p))
                return new Uint8Array(p.buffer.slice(p.byteOffset, p.byteOffset + p.byteLength));
        const b = bytesOf.get(p);
        if (b)
                return b.bytes;
        let s = String(p);
        if (endings === 'native')
                s = s.replace(/\r\n|\r/g, '\n');
        return enc.encode(s);
}
function concat(list) {
        let n = 0;
        for (const b of list)
                n += b.length;
        const out = new Uint8Array(n);
        let o = 0;
        for (const b of list) {
                out.set(b, o);
                o += b.length;
        }
        return out;
}
function normType(t) {
        t = t === undefined ? '' : String(t);
        return /[^\x20-\x7e]/.test(t) ? '' : t.toLowerCase();
}

class Blob {
        constructor(parts = undefined, options = undefined) {
                const o = options === undefined || options === null ? {} : options;
                if (typeof o !== 'object' && typeof o !== 'function')
                        throw new TypeError("Failed to construct 'Blob': The provided value is not of type 'BlobPropertyBag'.");
                const endings = o.endings === undefined ? 'transparent' : String(o.endings);
                if (endings !== 'transparent' && endings !== 'native')
                        throw new TypeError("Failed to construct 'Blob': The provided value '" + endings + "' is not a valid enum value of type EndingType.");
                const list = [];
                if (parts !== undefined) {
                        if (parts === null || typeof parts !== 'object' || typeof parts[Symbol.iterator] !== 'function')
                                throw new TypeError("Failed to construct 'Blob': The provided value cannot be converted to a sequence.");
                        for (const p of parts)
                                list.push(partBytes(p, endings));
                }
                bytesOf.set(this, { bytes: concat(list), type: normType(o.type) });
        }
        get size() { return blob(this).bytes.length; }
        get type() { return blob(this).type; }
        slice(start = undefined, end = undefined, contentType = undefined) {
                const b = blob(this).bytes, n = b.length;
                const rel = (v, d) => {
                        if (v === undefined)
                                return d;
                        v = Math.trunc(Number(v)) || 0;
                        return v < 0 ? Math.max(n + v, 0) : Math.min(v, n);
                };
                const s = rel(start, 0), e = rel(end, n);
                const out = new Blob([], { type: contentType === undefined ? '' : contentType });
                bytesOf.get(out).bytes = b.slice(s, Math.max(s, e));
                return out;
        }
        text() {
                try {
                        return Promise.resolve(new TextDecoder().decode(blob(this).bytes));
                } catch (e) {
                        return Promise.reject(e);
                }
        }
        arrayBuffer() {
                try {
                        return Promise.resolve(blob(this).bytes.slice().buffer);
                } catch (e) {
                        return Promise.reject(e);
                }
        }
        bytes() {
                try {
                        return Promise.resolve(blob(this).bytes.slice());
                } catch (e) {
                        return Promise.reject(e);
                }
        }
        stream() {
                const b = blob(this).bytes;
                const RS = require('web-streams-polyfill').ReadableStream;
                let off = 0;
                return new RS({
                        type: 'bytes',
                        pull(c) {
                                if (off >= b.length) {
                                        c.close();
                                        return;
                                }
                                const n = Math.min(65536, b.length - off);
                                c.enqueue(b.slice(off, off + n));
                                off += n;
                        },
                });
        }
}
function blob(v) {
        const b = bytesOf.get(v);
        if (!b)
                throw new TypeError('Illegal invocation: not a Blob');
        return b;
}
Object.defineProperty(Blob.prototype, Symbol.toStringTag, { value: 'Blob', configurable: true });

const fileInfo = new WeakMap();
class File extends Blob {
        constructor(bits, name, options = undefined) {
                need(arguments.length, 2, "Failed to construct 'File'");
                super(bits, options);
                const o = options === undefined || options === null ? {} : options;
                fileInfo.set(this, {
                        name: String(name),
                        lastModified: o.lastModified === undefined ? Date.now() : Math.trunc(Number(o.lastModified)) || 0,
                });
        }
        get name() { return file(this).name; }
        get lastModified() { return file(this).lastModified; }
        get webkitRelativePath() { return ''; }
}
function file(v) {
        const f = fileInfo.get(v);
        if (!f)
                throw new TypeError('Illegal invocation: not a File');
        return f;
}
Object.defineProperty(File.prototype, Symbol.toStringTag, { value: 'File', configurable: true });

const entriesOf = new WeakMap();
function fdEntry(name, value, filename, argc, what) {
        name = String(name);
        if (bytesOf.has(value)) {
                if (filename === undefined && fileInfo.has(value))
                        return [name, value];
                const fn = filename !== undefined ? String(filename) : 'blob';
                return [name, new File([value], fn, { type: value.type, lastModified: fileInfo.has(value) ? value.lastModified : undefined })];
        }
        if (argc > 2)
                throw new TypeError('Failed to execute \'' + what + "' on 'FormData': parameter 2 is not of type 'Blob'.");
        return [name, String(value)];
}
class FormData {
        constructor(form = undefined) {
                if (form !== undefined)
                        throw new TypeError("Failed to construct 'FormData': there are no HTML forms in chidori");
                entriesOf.set(this, []);
        }
        append(name, value, filename = undefined) {
                need(arguments.length, 2, "Failed to execute 'append' on 'FormData'");
                fd(this).push(fdEntry(name, value, filename, arguments.length, 'append'));
        }
        set(name, value, filename = undefined) {
                need(arguments.length, 2, "Failed to execute 'set' on 'FormData'");
                const l = fd(this), e = fdEntry(name, value, filename, arguments.length, 'set');
                const i = l.findIndex((x) => x[0] === e[0]);
                if (i < 0) {
                        l.push(e);
                        return;
                }
                l[i] = e;
                for (let j = l.length - 1; j > i; j--)
                        if (l[j][0] === e[0])
                                l.splice(j, 1);
        }
        get(name) {
                need(arguments.length, 1, "Failed to execute 'get' on 'FormData'");
                const e = fd(this).find((x) => x[0] === String(name));
                return e ? e[1] : null;
        }
        getAll(name) {
                need(arguments.length, 1, "Failed to execute 'getAll' on 'FormData'");
                return fd(this).filter((x) => x[0] === String(name)).map((x) => x[1]);
        }
        has(name) {
                need(arguments.length, 1, "Failed to execute 'has' on 'FormData'");
                return fd(this).some((x) => x[0] === String(name));
        }
        delete(name) {
                need(arguments.length, 1, "Failed to execute 'delete' on 'FormData'");
                const l = fd(this);
                for (let i = l.length - 1; i >= 0; i--)
                        if (l[i][0] === String(name))
                                l.splice(i, 1);
        }
        forEach(cb, thisArg = undefined) {
                if (typeof cb !== 'function')
                        throw new TypeError("Failed to execute 'forEach' on 'FormData': parameter 1 is not of type 'Function'.");
                for (const [k, v] of this)
                        cb.call(thisArg, v, k, this);
        }
        *entries() {
                const l = fd(this);
                for (let i = 0; i < l.length; i++)
                        yield [l[i][0], l[i][1]];
        }
        *keys() {
                for (const e of this.entries())
                        yield e[0];
        }
        *values() {
                for (const e of this.entries())
                        yield e[1];
        }
}
FormData.prototype[Symbol.iterator] = FormData.prototype.entries;
Object.defineProperty(FormData.prototype, Symbol.toStringTag, { value: 'FormData', configurable: true });
function fd(v) {
        const l = entriesOf.get(v);
        if (!l)
                throw new TypeError('Illegal invocation: not a FormData');
        return l;
}

// multipart/form-data (RFC 7578, as browsers write it): names and file
// names escape ", CR and LF as %22, %0D, %0A; string values get CRLF line ends.
function escName(s) {
        return s.replace(/\r\n|\r|\n/g, '\r\n').replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}
function multipart(form, boundary) {
        const parts = [];
        for (const [name, value] of fd(form)) {
                let head = '--' + boundary + '\r\nContent-Disposition: form-data; name="' + escName(name) + '"';
                if (typeof value === 'string') {
                        parts.push(enc.encode(head + '\r\n\r\n' + value.replace(/\r\n|\r|\n/g, '\r\n') + '\r\n'));
                } else {
                        head += '; filename="' + escName(value.name) + '"\r\nContent-Type: ' +
                                (value.type || 'application/octet-stream') + '\r\n\r\n';
                        parts.push(enc.encode(head), blob(value).bytes, enc.encode('\r\n'));
                }
        }
        parts.push(enc.encode('--' + boundary + '--\r\n'));
        return concat(parts);
}

// A fetch body made of a Blob or a FormData: {bytes, type} or null.
// `randomHex(n)` makes the boundary (the agent's seeded Math.random).
function bodyOf(v, randomHex) {
        const b = bytesOf.get(v);
        if (b)
                return { bytes: b.bytes, type: b.type || null };
        if (entriesOf.has(v)) {
                const boundary = '----chidori-formdata-' + randomHex(24);
                return { bytes: multipart(v, boundary), type: 'multipart/form-data; boundary=' + boundary };
        }
        return null;
}

// Response#formData(): application/x-www-form-urlencoded and multipart/form-data.
function parseForm(bytes, contentType) {
        const ct = String(contentType || '');
        const out = new FormData();
        if (/^application\/x-www-form-urlencoded/i.test(ct)) {
                for (const [k, v] of new URLSearchParams(new TextDecoder().decode(bytes)))
                        out.append(k, v);
                return out;
        }
        const m = /^multipart\/form-data\s*;.*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(ct);
        if (!m)
                throw new TypeError("Failed to fetch: the body's Content-Type is not multipart/form-data or application/x-www-form-urlencoded");
        const boundary = m[1] || m[2];
        const text = latin1(bytes);
        const delim = '--' + boundary;
        const pieces = text.split(delim);
        if (pieces.length < 2 || !/^--/.test(pieces[pieces.length - 1]))
                throw new TypeError('Failed to fetch: malformed multipart/form-data body');
        for (let i = 1; i < pieces.length - 1; i++) {
                let p = pieces[i];
                if (p.slice(0, 2) !== '\r\n')
                        throw new TypeError('Failed to fetch: malformed multipart/form-data body');
                p = p.slice(2, p.length - 2);  // CRLF before the next delimiter
                const sep = p.indexOf('\r\n\r\n');
                if (sep < 0)
                        throw new TypeError('Failed to fetch: malformed multipart/form-data part');
                const head = p.slice(0, sep), body = p.slice(sep + 4);
                const disp = /content-disposition:\s*form-data\s*;([^\r\n]*)/i.exec(head);
                if (!disp)
                        throw new TypeError('Failed to fetch: a multipart/form-data part has no Content-Disposition');
                const nm = /(?:^|;)\s*name="([^"]*)"/i.exec(disp[1]);
                const fn = /(?:^|;)\s*filename="([^"]*)"/i.exec(disp[1]);
                if (!nm)
                        throw new TypeError('Failed to fetch: a multipart/form-data part has no name');
                const name = utf8(nm[1]);
                const raw = Uint8Array.from(body, (c) => c.charCodeAt(0));
                if (fn) {
                        const t = /content-type:\s*([^\r\n]*)/i.exec(head);
                        out.append(name, new File([raw], utf8(fn[1]), { type: t ? t[1].trim() : '' }));
                } else {
                        out.append(name, new TextDecoder().decode(raw));
                }
        }
        return out;
}
function latin1(bytes) {
        let s = '';
        for (let i = 0; i < bytes.length; i += 8192)
                s += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
        return s;
}
function utf8(l1) {
        return new TextDecoder().decode(Uint8Array.from(l1, (c) => c.charCodeAt(0)));
}

module.exports = { Blob, File, FormData, bodyOf, parseForm };
