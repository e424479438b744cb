// The tables of tests/unit/json_tables.h, produced by node (the oracle):
//   node tests/values/tables.js > tests/unit/json_tables.h
// Numbers: a double's bits and String(x).  Strings: bytes, and what
// JSON.stringify prints for the string node gets by decoding them as UTF-8.
'use strict';
let seed = 15;
function rnd() { // xorshift32
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed;
}
const dv = new DataView(new ArrayBuffer(8));

const nums = [0.1 + 0.2, 41 / 11, 1e-7, 1e21, 5e-324, 2 ** 53 + 1, -0, 1.7976931348623157e308, 0.1, 1e-6, 1e20,
  123e-20, 1.5e300, -1.5e-300, 100, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 2 ** 64, 1 / 3, 2 / 3, 0.000001234, 1e-323,
  2.2250738585072014e-308, 2.225073858507201e-308, 9007199254740993, 123456789012345680000, 1.2345678901234567e21,
  -1e-7, 4.35, 0.5, 1e15, 1e16, 1e17, 999999999999999900000, 1e100, 5e-7, 1.0000000000000002, 0.30000000000000004];
for (let i = 0; i < 120; i++) {
  dv.setUint32(0, rnd()); dv.setUint32(4, rnd());
  const d = dv.getFloat64(0);
  if (Number.isFinite(d)) nums.push(d);
}
for (let i = 0; i < 60; i++) nums.push((rnd() % 100000) / (1 + rnd() % 1000) * 10 ** ((rnd() % 40) - 20));

function cstr(bytes) {
  let s = '"';
  for (const b of bytes) {
    if (b === 0x22 || b === 0x5c) s += '\\' + String.fromCharCode(b);
    else if (b >= 0x20 && b < 0x7f && b !== 0x3f) s += String.fromCharCode(b);
    else s += '\\' + b.toString(8).padStart(3, '0');
  }
  return s + '"';
}

const strs = [
  [], [0x41], [0x00], [0x00, 0x41, 0x00], [0x22, 0x5c, 0x2f], [0x08, 0x0c, 0x0a, 0x0d, 0x09], [0x01, 0x1f, 0x0b, 0x7f],
  [...Buffer.from('\u2028\u2029')], [...Buffer.from('\u{1F600}\u{10FFFF}')], [...Buffer.from('héllo wörld')],
  [0x80], [0xff], [0xc0, 0x80], [0xc1, 0xbf], [0xc2], [0xc2, 0x41], [0xe0, 0x80, 0x80], [0xe0, 0xa0],
  [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xed, 0x9f, 0xbf], [0xef, 0xbf, 0xbd], [0xf0, 0x80, 0x80, 0x80],
  [0xf0, 0x90, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf5, 0x80], [0xe2, 0x82, 0x41, 0xe2, 0x82, 0xac],
  [0xf0, 0x9f, 0x98], [0x41, 0xf0, 0x9f, 0x98, 0x80, 0x42],
];
for (let i = 0; i < 40; i++) {
  const n = rnd() % 12, b = [];
  for (let k = 0; k < n; k++) b.push(rnd() % 4 === 0 ? rnd() % 0x80 : 0x80 + rnd() % 0x80);
  strs.push(b);
}

console.log('/* tests/unit/json_tables.h — produced by node: node tests/values/tables.js */');
console.log('static const struct { uint64_t bits; const char *js; } number_table[] = {');
for (const d of nums) {
  dv.setFloat64(0, d);
  console.log(`        { 0x${dv.getBigUint64(0).toString(16).padStart(16, '0')}ull, "${String(d)}" },`);
}
console.log('};');
console.log('static const struct { const char *bytes; size_t len; const char *json; } string_table[] = {');
for (const b of strs) {
  const json = Buffer.from(JSON.stringify(Buffer.from(b).toString('utf8')));
  console.log(`        { ${cstr(b)}, ${b.length}, ${cstr([...json])} },`);
}
console.log('};');
