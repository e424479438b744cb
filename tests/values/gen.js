// tests/values/gen.js — the values of the property test (tests/bats/values.bats),
// with node as the oracle:
//
//   node tests/values/gen.js DIR [SEED] [N]
//
// generates N values (default 2000) from SEED (default 15) — numbers at the
// edges of double precision, strings with NUL, control characters,
// U+2028/U+2029, lone surrogates and astral characters, deep and wide arrays
// and objects — and writes into DIR:
//   values.json        JSON.stringify(V): what chidori must print for V, byte for byte
//   stdout.js          returns V (its source builds V as a JS literal)
//   memory.js          memory.set then memory.get of every value, checked inside the
//                      agent (=== for primitives, deep-equal otherwise), returns what it got
//   input.js           returns its input (--input-file values.json; --input input.json,
//                      the values that fit in one argument)
//   answers.js         returns N answers of chidori.input() (--answers values.json)
//   tool.js, tools.json the values through a tool that echoes its args (cat)
//   nested.js, identity.js  the values through callAgent of an identity agent
//   edge-K.js, edge-K.json  one agent per value of a short edge list, and its text
// Every agent throws (exit 1) when a value it checks differs.
'use strict';
const fs = require('fs');
const path = require('path');

const dir = process.argv[2];
const seed0 = Number(process.argv[3] || 15);
const N = Number(process.argv[4] || 2000);
if (!dir) {
  console.error('usage: node tests/values/gen.js DIR [SEED] [N]');
  process.exit(2);
}

let seed = seed0 >>> 0 || 1;
function rnd() { // xorshift32
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed;
}
const pick = (a) => a[rnd() % a.length];
const dv = new DataView(new ArrayBuffer(8));

const EDGE_NUMBERS = [0.1 + 0.2, 41 / 11, 1e-7, 1e-6, 1e21, 1e20, 5e-324, 2 ** 53 + 1, 2 ** 53 - 1, -0,
  1.7976931348623157e308, -1.7976931348623157e308, 2.2250738585072014e-308, 123e-20, 1 / 3, 0.1, 1e15, 1e16,
  999999999999999900000, 1.0000000000000002, 4.35, 0.000001234, 2 ** 31, -(2 ** 31) - 1, 2 ** 64, NaN, Infinity];

function number() {
  switch (rnd() % 6) {
  case 0: return pick(EDGE_NUMBERS);
  case 1: { // any finite double
    for (;;) {
      dv.setUint32(0, rnd()); dv.setUint32(4, rnd());
      const d = dv.getFloat64(0);
      if (Number.isFinite(d)) return d;
    }
  }
  case 2: return (rnd() % 2000000 - 1000000) / 10 ** (rnd() % 12);
  case 3: return (rnd() - 2 ** 31) * 2 ** ((rnd() % 60) - 30);
  case 4: return 2 ** 53 + (rnd() % 64) - 32;
  default: return (rnd() % 1000) * 10 ** ((rnd() % 50) - 25);
  }
}

const PIECES = ['\u0000', '\u0001', '\u001f', '\b', '\f', '\n', '\r', '\t', '\u000b', '"', '\\', '/', '\u007f',
  '\u0080', '\u009f', '\u00e9', '\u2028', '\u2029', '\ufeff', '\ufffd', '\ud800', '\udbff', '\udc00', '\udfff',
  '\ud83d\ude00', '\udbff\udfff', '\udc00\ud800', '\u{10000}', '\u4e2d\u6587', 'a', 'Z', ' ', '~', '0', '{', '}',
  '[', ']', ',', ':', 'hello', '\u0000\u0000'];

function string() {
  const n = rnd() % 12;
  let s = '';
  for (let i = 0; i < n; i++) s += pick(PIECES);
  if (rnd() % 50 === 0) s += 'x'.repeat(rnd() % 5000);
  return s;
}

function key() {
  switch (rnd() % 8) {
  case 0: return string();
  case 1: return pick(['__proto__', 'constructor', '', '0', '1', '10', 'toString', 'a b']);
  default: return 'k' + (rnd() % 40);
  }
}

function value(depth) {
  const r = rnd() % (depth > 4 ? 6 : 9);
  if (r < 3) return number();
  if (r < 5) return string();
  if (r === 5) return pick([true, false, null]);
  if (r < 8) {
    const a = [];
    for (let i = rnd() % 6; i > 0; i--) a.push(value(depth + 1));
    return a;
  }
  const o = {};
  for (let i = rnd() % 6; i > 0; i--) Object.defineProperty(o, key(), {
    value: value(depth + 1), enumerable: true, writable: true, configurable: true });
  return o;
}

function deep(n) {
  let v = pick([1e-7, 'a\u0000b', '\ud800', 0.1 + 0.2]);
  for (let i = 0; i < n; i++) v = i % 2 ? [v] : { d: v };
  return v;
}

function wide(n) {
  const o = {};
  for (let i = 0; i < n; i++) o['m' + i] = i % 3 ? i / 7 : string().slice(0, 8);
  return o;
}

// A JS expression that builds v in any engine: -0, NaN, Infinity, lone
// surrogates, and keys like __proto__ (computed, so they are own properties).
function js(v) {
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return '[' + v.map(js).join(',') + ']';
  return '{' + Object.keys(v).map((k) => '[' + JSON.stringify(k) + ']:' + js(v[k])).join(',') + '}';
}

const EDGES = [0.1 + 0.2, 41 / 11, 1e-7, 1e21, 5e-324, 2 ** 53 + 1, -0, 1.7976931348623157e308, NaN,
  'a\u0000b', '\ud800', 'x\udc00', '\u2028\u2029', '\ud83d\ude00', '\u001f\u007f"\\', deep(200),
  { ['__proto__']: [1e-7], 'a\u0000': '\udbff' }];

const V = [];
for (const e of EDGES) V.push(e);
V.push(deep(200), wide(10000), Array.from({ length: 10000 }, (_, i) => (i % 2 ? i / 3 : '\u0000' + i)));
while (V.length < N) V.push(value(0));

const text = JSON.stringify(V);
fs.mkdirSync(dir, { recursive: true });
const w = (name, s) => fs.writeFileSync(path.join(dir, name), s);
w('values.json', text);
// --input takes one argument (at most 128 KiB on Linux): the values that fit in 100 KB.
const small = [];
let used = 2;
for (const v of V) {
  const t = JSON.stringify(v) ?? 'null';
  if (used + Buffer.byteLength(t) + 1 > 100000) continue;
  small.push(v);
  used += Buffer.byteLength(t) + 1;
}
w('input.json', JSON.stringify(small));

const same = `
function same(a, b) {
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++)
    if (ka[i] !== kb[i] || !same(a[ka[i]], b[kb[i]])) return false;
  return true;
}
// What V[i] is once it has been through JSON (NaN -> null, -0 -> 0).
function check(what, got) {
  const bad = [];
  for (let i = 0; i < V.length; i++) {
    const want = JSON.parse(JSON.stringify(V[i]));
    const ok = want === null || typeof want !== 'object' ? got[i] === want : same(got[i], want);
    if (!ok) bad.push(i + ': ' + JSON.stringify(got[i]).slice(0, 80) + ' != ' + JSON.stringify(want).slice(0, 80));
  }
  if (bad.length) throw new Error(what + ': ' + bad.length + ' values differ: ' + bad.slice(0, 5).join('; '));
}
`;
const head = '// generated by tests/values/gen.js (seed ' + seed0 + ')\nconst V = ' + js(V) + ';\n' + same;

w('stdout.js', head + 'module.exports = async () => V;\n');
w('memory.js', head + `module.exports = async () => {
  await Promise.all(V.map((v, i) => chidori.memory.set('v' + i, v)));
  // Every get is asked for before any answer is read; the synchronous calls
  // in between make the answers arrive while one waits (the queued path).
  const gets = V.map((_, i) => chidori.memory.get('v' + i));
  let t = 0;
  for (let i = 0; i < 64; i++) t += Date.now() > 0 ? 1 : 0;
  const got = await Promise.all(gets);
  check('memory', got);
  return got;
};
`);
w('input.js', 'module.exports = async (input) => input;\n');
w('identity.js', 'module.exports = async (input) => input;\n');
w('answers.js', head + `module.exports = async () => {
  const got = [];
  for (let i = 0; i < V.length; i++) got.push(await chidori.input('q' + i));
  check('answers', got);
  return got;
};
`);
w('tools.json', JSON.stringify({ echo: { command: ['cat'], max_output_bytes: 16 << 20, timeout_ms: 60000 } }));
w('tool.js', head + `module.exports = async () => {
  const got = await chidori.tool('echo', V);
  check('tool', got);
  // one value per call, for the edge values
  for (let i = 0; i < ${EDGES.length}; i++) {
    const one = await chidori.tool('echo', [V[i]]);
    check('tool value ' + i, V.map((v, k) => (k === i ? one[0] : JSON.parse(JSON.stringify(v)))));
  }
  return got;
};
`);
w('nested.js', head + `module.exports = async () => {
  const got = await chidori.callAgent('identity.js', V);
  check('callAgent', got);
  const edges = [];
  for (let i = 0; i < ${EDGES.length}; i++) edges.push(await chidori.callAgent('identity.js', V[i]));
  check('callAgent values', V.map((v, k) => (k < edges.length ? edges[k] : JSON.parse(JSON.stringify(v)))));
  return got;
};
`);
EDGES.forEach((e, i) => {
  w('edge-' + i + '.js', '// generated by tests/values/gen.js\nmodule.exports = async () => (' + js(e) + ');\n');
  w('edge-' + i + '.json', JSON.stringify(e));
});
w('edges', String(EDGES.length));
console.log('values: seed ' + seed0 + ', ' + V.length + ' values, ' + text.length + ' bytes of JSON, ' +
  EDGES.length + ' edge values');
