/* engine/format.js - util.format and inspect: how console.* and the errors
 * of a run show values (docs/api.md, "console").
 *
 * Evaluated on first use, not at every start (docs/decisions.md, "console's
 * formatting (format.js) is evaluated on first use"): the prelude's
 * fmt() calls the natives' load('format', intrinsics) the first time a value
 * is formatted.  The script's `this` is that object: the intrinsics the
 * prelude captured before any agent code ran (and GLOBAL_CTORS, web.js's
 * classes as web.js defined them), so what an agent did to the globals
 * meanwhile changes nothing here; it reads and defines no global.  Its
 * completion value is {format, inspect, formatError}.  The code is the
 * script's own top-level block (not a function it returns), so JSC parses
 * it once at load, as it did inside the prelude. */
'use strict';
{
const {
        ErrorC, FunctionProto, G, NumberC, O, RangeErrorC, StringC, abByteLengthGet, apply, brand, create,
        dateGetTime, dateToISOString, fixStack, fnToString, getOwnPropertyDescriptor, getPrototypeOf, hasOwn,
        is, isArray, mapForEach, mapSizeGet, objToString, ownKeys, regexpSourceGet, regexpToString,
        safeString, setForEach, setSizeGet, stringify, symToString, taLengthGet, taTagGet, GLOBAL_CTORS
} = this;

let maxDepth = 2;  // nesting shown before [Object]; %s uses 0
const MAX_ITEMS = 100;
const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const NEEDS_ESCAPE = /[\x00-\x1f\x7f\\'"`]/;

function quote(s) {
        let q = "'";
        if (s.indexOf("'") !== -1) {
                if (s.indexOf('"') === -1)
                        q = '"';
                else if (s.indexOf('`') === -1 && s.indexOf('${') === -1)
                        q = '`';
        }
        if (!NEEDS_ESCAPE.test(s))
                return q + s + q;
        let out = q;
        for (let i = 0; i < s.length; i++) {
                const c = s.charCodeAt(i), ch = s[i];
                if (ch === q || ch === '\\')
                        out += '\\' + ch;
                else if (c === 10)
                        out += '\\n';
                else if (c === 9)
                        out += '\\t';
                else if (c === 13)
                        out += '\\r';
                else if (c === 8)
                        out += '\\b';
                else if (c === 12)
                        out += '\\f';
                else if (c === 11)
                        out += '\\v';
                else if (c < 0x20 || c === 0x7f)
                        out += '\\x' + (c < 16 ? '0' : '') + c.toString(16).toUpperCase();
                else
                        out += ch;
        }
        return out + q;
}

function formatKey(k) {
        if (typeof k === 'symbol')
                return '[' + apply(symToString, k, []) + ']';
        return IDENT.test(k) ? k : quote(k);
}

function errorHeader(e) {
        let name, message;
        try {
                name = e.name;
        } catch (x) { /* keep default */ }
        try {
                message = e.message;
        } catch (x) { /* keep default */ }
        name = name === undefined ? 'Error' : safeString(name);
        message = message === undefined ? '' : safeString(message);
        return message ? name + ': ' + message : name;
}

function formatError(e) {
        let stack;
        try {
                stack = e.stack;
        } catch (x) { /* no stack */ }
        let out = errorHeader(e);
        if (typeof stack === 'string' && stack) {
                const lines = fixStack(stack).split('\n');
                for (let i = 0; i < lines.length; i++)
                        if (lines[i])
                                out += '\n    at ' + lines[i];
        }
        return out;
}

function functionBase(f) {
        let name = '';
        try {
                const d = getOwnPropertyDescriptor(f, 'name');
                if (d && typeof d.value === 'string')
                        name = d.value;
        } catch (x) { /* anonymous */ }
        let src = '';
        try {
                src = apply(fnToString, f, []);
        } catch (x) { /* not inspectable */ }
        if (src.slice(0, 5) === 'class' && /^class\b/.test(src)) {
                let ext = '';
                try {
                        const sup = getPrototypeOf(f);
                        if (sup !== null && sup !== FunctionProto)
                                ext = ' extends ' + (typeof sup.name === 'string' && sup.name ? sup.name : '(anonymous)');
                } catch (x) { /* no superclass shown */ }
                return '[class ' + (name || '(anonymous)') + ext + ']';
        }
        const tag = apply(objToString, f, []).slice(8, -1);
        const kind = tag === 'Function' ? 'Function' : tag;
        return name ? '[' + kind + ': ' + name + ']' : '[' + kind + ' (anonymous)]';
}

function constructorName(v) {
        let proto;
        try {
                proto = getPrototypeOf(v);
        } catch (x) {
                return 'Object';
        }
        if (proto === null)
                return null;
        try {
                const d = getOwnPropertyDescriptor(proto, 'constructor');
                if (d && typeof d.value === 'function' && typeof d.value.name === 'string' && d.value.name)
                        return d.value.name;
        } catch (x) { /* unknown */ }
        return 'Object';
}

function propertyEntries(v, depth, seen, out, skipIndices) {
        const keys = ownKeys(v);
        for (let i = 0; i < keys.length; i++) {
                const k = keys[i];
                if (skipIndices && typeof k === 'string' && StringC(k >>> 0) === k && k >>> 0 !== 4294967295)
                        continue;
                let d;
                try {
                        d = getOwnPropertyDescriptor(v, k);
                } catch (x) {
                        continue;
                }
                if (!d || !d.enumerable)
                        continue;
                let s;
                if (d.get && d.set)
                        s = '[Getter/Setter]';
                else if (d.get)
                        s = '[Getter]';
                else if (d.set)
                        s = '[Setter]';
                else
                        s = inspectValue(d.value, depth + 1, seen);
                out[out.length] = formatKey(k) + ': ' + s;
        }
}

function wrapEntries(prefix, open, close, items) {
        if (items.length === 0)
                return prefix + open + close;
        return prefix + open + ' ' + items.join(', ') + ' ' + close;
}

function inspectObject(v, depth, seen) {
        for (let i = 0; i < seen.length; i++)
                if (seen[i] === v)
                        return '[Circular]';
        const tag = apply(objToString, v, []).slice(8, -1);
        if (typeof v === 'function') {
                const base = functionBase(v);
                const items = [];
                if (depth <= maxDepth) {
                        seen[seen.length] = v;
                        propertyEntries(v, depth, seen, items, false);
                        seen.length--;
                }
                return items.length ? wrapEntries(base + ' ', '{', '}', items) : base;
        }
        if (tag === 'Error' || v instanceof ErrorC)
                return depth === 0 ? formatError(v) : '[' + errorHeader(v) + ']';
        if (brand(dateGetTime, v)) {
                const t = apply(dateGetTime, v, []);
                return t === t ? apply(dateToISOString, v, []) : 'Invalid Date';
        }
        if (tag === 'RegExp' && brand(regexpSourceGet, v) && v !== RegExp.prototype)
                return apply(regexpToString, v, []);
        if (tag === 'Number' || tag === 'String' || tag === 'Boolean' || tag === 'BigInt' || tag === 'Symbol') {
                try {
                        const prim = v.valueOf();
                        if (typeof prim !== 'object')
                                return '[' + tag + ': ' + inspectValue(prim, depth + 1, seen) + ']';
                } catch (x) { /* fall through to a plain object */ }
        }
        if (tag === 'WeakMap' || tag === 'WeakSet')
                return tag + ' { <items unknown> }';
        if (tag === 'Promise')
                return 'Promise {}';

        const ctor = constructorName(v);
        const taTag = apply(taTagGet, v, []);
        const isMap = !taTag && brand(mapSizeGet, v);
        const isSet = !taTag && !isMap && brand(setSizeGet, v);
        const isAB = !taTag && !isMap && !isSet && brand(abByteLengthGet, v);
        const arr = isArray(v);
        let prefix = '';
        if (ctor === null)
                prefix = '[' + (arr ? 'Array' : 'Object') + ': null prototype] ';
        else if (taTag)
                prefix = ctor + '(' + apply(taLengthGet, v, []) + ') ';
        else if (isMap)
                prefix = ctor + '(' + apply(mapSizeGet, v, []) + ') ';
        else if (isSet)
                prefix = ctor + '(' + apply(setSizeGet, v, []) + ') ';
        else if (ctor !== (arr ? 'Array' : 'Object'))
                prefix = ctor + ' ';
        if (depth > maxDepth)
                return '[' + (ctor === null ? 'Object: null prototype' : arr ? 'Array' : ctor) + ']';

        seen[seen.length] = v;
        const items = [];
        let open = '{', close = '}';
        if (arr || taTag) {
                open = '[';
                close = ']';
                const len = taTag ? apply(taLengthGet, v, []) : v.length;
                const shown = len < MAX_ITEMS ? len : MAX_ITEMS;
                let holes = 0;
                for (let i = 0; i < shown; i++) {
                        if (!taTag && !apply(hasOwn, v, [i])) {
                                holes++;
                                continue;
                        }
                        if (holes) {
                                items[items.length] = '<' + holes + ' empty item' + (holes > 1 ? 's' : '') + '>';
                                holes = 0;
                        }
                        let s;
                        const d = taTag ? null : getOwnPropertyDescriptor(v, i);
                        if (d && d.get)
                                s = d.set ? '[Getter/Setter]' : '[Getter]';
                        else if (d && d.set)
                                s = '[Setter]';
                        else
                                s = inspectValue(taTag ? v[i] : d.value, depth + 1, seen);
                        items[items.length] = s;
                }
                if (holes)
                        items[items.length] = '<' + holes + ' empty item' + (holes > 1 ? 's' : '') + '>';
                if (len > shown)
                        items[items.length] = '... ' + (len - shown) + ' more item' + (len - shown > 1 ? 's' : '');
                if (!taTag)
                        propertyEntries(v, depth, seen, items, true);
        } else if (isMap) {
                let n = 0;
                apply(mapForEach, v, [(val, key) => {
                        if (n++ < MAX_ITEMS)
                                items[items.length] = inspectValue(key, depth + 1, seen) + ' => ' +
                                        inspectValue(val, depth + 1, seen);
                }]);
                if (n > MAX_ITEMS)
                        items[items.length] = '... ' + (n - MAX_ITEMS) + ' more item' + (n - MAX_ITEMS > 1 ? 's' : '');
                propertyEntries(v, depth, seen, items, false);
        } else if (isSet) {
                let n = 0;
                apply(setForEach, v, [(val) => {
                        if (n++ < MAX_ITEMS)
                                items[items.length] = inspectValue(val, depth + 1, seen);
                }]);
                if (n > MAX_ITEMS)
                        items[items.length] = '... ' + (n - MAX_ITEMS) + ' more item' + (n - MAX_ITEMS > 1 ? 's' : '');
                propertyEntries(v, depth, seen, items, false);
        } else if (isAB) {
                items[items.length] = 'byteLength: ' + apply(abByteLengthGet, v, []);
        } else {
                propertyEntries(v, depth, seen, items, false);
                const proto = ctor === null ? null : getPrototypeOf(v);
                if (proto !== null && isWebClass(proto.constructor, ctor))
                        webClassEntries(v, proto, depth, seen, items);
        }
        seen.length--;
        return wrapEntries(prefix, open, close, items);
}

function inspectValue(v, depth, seen) {
        switch (typeof v) {
        case 'string':
                return quote(v);
        case 'number':
                return is(v, -0) ? '-0' : '' + v;
        case 'bigint':
                return v + 'n';
        case 'boolean':
                return v ? 'true' : 'false';
        case 'undefined':
                return 'undefined';
        case 'symbol':
                return apply(symToString, v, []);
        }
        if (v === null)
                return 'null';
        return inspectObject(v, depth, seen);
}

function inspect(v, depthLimit = 2) {
        const saved = maxDepth;
        maxDepth = depthLimit;
        try {
                return inspectValue(v, 0, []);
        } catch (e) {
                if (e instanceof RangeErrorC)
                        throw e;  // out of stack: let it surface
                return '[object ' + (typeof v) + ']';
        } finally {
                maxDepth = saved;
        }
}

function isNative(f) {
        try {
                return apply(fnToString, f, []).indexOf('[native code]') !== -1;
        } catch (e) {
                return false;
        }
}
const webClassCache = create(null);
// A class defined by web.js (URL, TextEncoder...): its state is private, so
// inspection shows its accessors' values instead of own properties.
function isWebClass(ctor, name) {
        if (GLOBAL_CTORS[name] !== ctor)
                return false;
        if (webClassCache[name] === undefined)
                webClassCache[name] = !isNative(ctor);
        return webClassCache[name];
}
function webClassEntries(v, proto, depth, seen, out) {
        const keys = O.getOwnPropertyNames(proto);
        for (let i = 0; i < keys.length; i++) {
                const d = getOwnPropertyDescriptor(proto, keys[i]);
                if (!d.get || keys[i] === 'constructor')
                        continue;
                try {
                        out[out.length] = formatKey(keys[i]) + ': ' + inspectValue(apply(d.get, v, []), depth + 1, seen);
                } catch (e) { /* not shown */ }
        }
}

// For %s: an object whose toString is built in (native) is inspected; a
// toString written in JS (the agent's, or web.js's URL) is called, as Node's
// util.format does.
function hasBuiltinToString(o) {
        try {
                const f = o.toString;
                if (typeof f !== 'function')
                        return true;
                return !apply(hasOwn, o, ['toString']) && isNative(f);
        } catch (e) {
                return true;
        }
}

function formatNumber(n) {
        return is(n, -0) ? '-0' : '' + n;
}

// Node's util.format: printf-like specifiers in a leading string, then the
// remaining arguments separated by spaces (strings raw, the rest inspected).
function format(args) {
        const n = args.length;
        if (n === 0)
                return '';
        let out = '', i = 0;
        const first = args[0];
        if (typeof first === 'string') {
                if (n === 1)
                        return first;
                i = 1;
                let last = 0;
                for (let j = 0; j < first.length - 1; j++) {
                        if (first.charCodeAt(j) !== 37)  // '%'
                                continue;
                        const c = first[j + 1];
                        if (c === '%') {
                                out += first.slice(last, j) + '%';
                                last = j + 2;
                                j++;
                                continue;
                        }
                        if (i >= n)
                                continue;
                        let rep;
                        const a = args[i];
                        switch (c) {
                        case 's':
                                if (typeof a === 'string')
                                        rep = a;
                                else if (typeof a === 'bigint')
                                        rep = a + 'n';
                                else if (typeof a === 'number')
                                        rep = formatNumber(a);
                                else if (typeof a === 'symbol')
                                        rep = apply(symToString, a, []);
                                else if (a !== null && typeof a === 'object')
                                        rep = hasBuiltinToString(a) ? inspect(a, 0) : safeString(a);
                                else
                                        rep = StringC(a);
                                break;
                        case 'd':
                                rep = typeof a === 'bigint' ? a + 'n' : typeof a === 'symbol' ? 'NaN' :
                                        (a !== null && typeof a === 'object') ? 'NaN' : formatNumber(NumberC(a));
                                break;
                        case 'i':
                                rep = typeof a === 'bigint' ? a + 'n' : typeof a === 'symbol' ? 'NaN' :
                                        formatNumber(parseInt(a));
                                break;
                        case 'f':
                                rep = typeof a === 'symbol' ? 'NaN' : formatNumber(parseFloat(a));
                                break;
                        case 'j':
                                try {
                                        rep = stringify(a);
                                        if (rep === undefined)
                                                rep = 'undefined';
                                } catch (e) {
                                        rep = '[Circular]';
                                }
                                break;
                        case 'o':
                        case 'O':
                                rep = inspect(a);
                                break;
                        case 'c':
                                rep = '';
                                break;
                        default:
                                continue;
                        }
                        out += first.slice(last, j) + rep;
                        last = j + 2;
                        j++;
                        i++;
                }
                out += first.slice(last);
        }
        for (; i < n; i++) {
                const a = args[i];
                if (out || i > 0)
                        out += ' ';
                out += typeof a === 'string' ? a : inspect(a);
        }
        return out;
}

// The completion value of this script.
({ format, inspect, formatError });
}
