// tests/surface/modules.js — the node: modules, required both ways; node is
// the oracle (tests/bats/surface.bats runs this file under chidori and node
// and compares the JSON byte for byte).  Only what is the same on both sides
// is returned (no argv, versions, random boundaries).
module.exports = async function () {
  const out = {};
  // nextTick from the synchronous part of main: before promise jobs.
  const order = [];
  process.nextTick(() => order.push('tick1'));
  Promise.resolve().then(() => order.push('promise'));
  process.nextTick(() => order.push('tick2'));
  const same = {};
  for (const m of ['assert', 'buffer', 'events', 'path', 'querystring', 'stream', 'string_decoder', 'timers', 'url', 'util', 'process'])
    same[m] = require(m) === require('node:' + m);
  out.same = same;

  const path = require('node:path');
  out.path = [path.join('/a', '../b', 'c.js'), path.resolve('/a', 'b', '../c'), path.relative('/a/b/c', '/a/d'),
    path.parse('/home/u/f.tar.gz'), path.format({ dir: '/x', name: 'y', ext: '.z' }), path.normalize('a//b/./c/..'),
    path.extname('x.md'), path.dirname('/a/b/'), path.basename('/a/b.js', '.js'), path.isAbsolute('a'),
    path.sep, path.delimiter, path.posix === path, require('path/posix') === path];

  const { EventEmitter, once } = require('events');
  const e = new EventEmitter();
  const log = [];
  e.on('x', (v) => log.push('on' + v));
  e.prependListener('x', (v) => log.push('pre' + v));
  e.once('x', (v) => log.push('once' + v));
  e.emit('x', 1);
  e.emit('x', 2);
  setTimeout(() => e.emit('later', 'L'), 1);
  const [lv] = await once(e, 'later');
  out.events = [log, e.listenerCount('x'), e.eventNames(), lv, EventEmitter.defaultMaxListeners, typeof require('events').EventEmitter];

  const util = require('node:util');
  const pf = util.promisify((a, cb) => cb(null, a * 2));
  out.util = [util.format('%s=%d %i %f %j', 'a', 42, 3.9, '1.5', { k: [1] }), util.format('x', { a: 1 }, [1, 2], 'y'),
    util.inspect({ a: { b: { c: { d: 1 } } } }), util.inspect({ a: { b: { c: { d: 1 } } } }, { depth: 0 }),
    util.inspect('s'), util.inspect([1, 'two', null, undefined]), await pf(21),
    util.types.isPromise(Promise.resolve()), util.types.isDate(new Date()), util.types.isRegExp(/x/),
    util.isDeepStrictEqual({ a: [1] }, { a: [1] }), util.isDeepStrictEqual({ a: 1 }, { a: '1' }),
    util.TextEncoder === TextEncoder, typeof util.inherits, typeof util.deprecate(() => 1, 'm'),
    require('util/types').isUint8Array(new Uint8Array(1))];

  const url = require('url');
  const u = url.parse('http://user:pw@host.com:8080/p/a/t/h?query=string#hash');
  out.url = [u.protocol, u.auth, u.host, u.port, u.hostname, u.hash, u.search, u.query, u.pathname, u.path, u.href,
    url.parse('/p?a=1&a=2', true).query, url.format({ protocol: 'https', hostname: 'x.com', pathname: '/a b', query: { q: '1 2' } }),
    url.resolve('/one/two/three', 'four'), url.resolve('http://example.com/', '/one'), url.resolve('http://example.com/one', '/two'),
    url.fileURLToPath('file:///tmp/a%20b'), url.pathToFileURL('/tmp/a b#c?').href, url.URL === URL,
    new url.URLSearchParams('a=1&b=2').get('b')];

  const { Buffer } = require('node:buffer');
  const b = Buffer.from('héllo wörld');
  const w = Buffer.alloc(8);
  w.writeInt16BE(-2, 0);
  w.writeUInt32LE(0xdeadbeef, 2);
  out.buffer = [b.toString('base64'), b.toString('hex'), b.toString('latin1'), b.length, Buffer.byteLength('héllo'),
    Buffer.concat([Buffer.from('a'), Buffer.from([98, 99])]).toString(), Buffer.alloc(5, 'ab').toString(),
    [...w], w.readUInt32LE(2), w.readInt16BE(0), Buffer.compare(Buffer.from('a'), Buffer.from('b')),
    Buffer.from('abc').equals(Buffer.from('abc')), b.subarray(0, 5).toString(), Buffer.isBuffer(b), b.indexOf('w'),
    JSON.stringify(Buffer.from([1, 2])), Buffer.from('aGk=', 'base64').toString(), Buffer.from('6869', 'hex').toString(),
    Buffer.from('héllo').toString('utf8', 1, 3), b instanceof Uint8Array, typeof require('buffer').Blob];

  const { Readable, Writable, Transform, PassThrough, pipeline, finished } = require('stream');
  const got = [];
  await require('stream/promises').pipeline(
    Readable.from(['a', 'b', 'c']),
    new Transform({ transform(chunk, enc, cb) { cb(null, String(chunk).toUpperCase()); } }),
    new PassThrough(),
    new Writable({ write(chunk, enc, cb) { got.push(String(chunk)); cb(); } }));
  const fin = await new Promise((res) => {
    const r = Readable.from(['x']);
    r.resume();
    finished(r, (err) => res(err ? 'err' : 'finished'));
  });
  const perr = await new Promise((res) => pipeline(
    new Readable({ read() { this.destroy(new Error('boom')); } }),
    new PassThrough(), (err) => res(err && err.message)));
  const chunks = [];
  for await (const c of Readable.from([1, 2, 3])) chunks.push(c);
  out.stream = [got, fin, perr, chunks, typeof require('stream').Duplex, typeof require('stream/promises').finished];

  const assert = require('assert');
  const caught = [];
  for (const f of [() => assert.strictEqual(1, 2), () => assert.deepStrictEqual({ a: 1 }, { a: 2 }),
    () => assert.strict.equal(1, '1'), () => assert.ok(0), () => assert.throws(() => {})]) {
    try { f(); caught.push('no throw'); } catch (x) { caught.push([x.name, x.code, x instanceof assert.AssertionError]); }
  }
  assert.deepStrictEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] });
  assert.throws(() => { throw new TypeError('t'); }, TypeError);
  await assert.rejects(Promise.reject(new Error('r')), /r/);
  out.assert = [caught, require('assert/strict') === assert.strict, assert.equal(1, '1') === undefined];

  const { StringDecoder } = require('string_decoder');
  const sd = new StringDecoder('utf8');
  const euro = Buffer.from('€');
  out.string_decoder = [sd.write(euro.subarray(0, 1)), sd.write(euro.subarray(1)), sd.end(Buffer.from([0xe2])),
    new StringDecoder('base64').write(Buffer.from('ab')), new StringDecoder('hex').end(Buffer.from([255]))];

  const qs = require('querystring');
  out.querystring = [qs.parse('a=1&a=2&b=%20x&c'), qs.stringify({ a: [1, 2], b: 'x y', c: '' }), qs.escape('a b&c'),
    qs.unescape('a%20b'), qs.stringify({ w: 'é' }, ';', ':')];

  const tp = require('timers/promises');
  order.push(await tp.setTimeout(2, 'timeout-value'));
  order.push(await tp.setImmediate('immediate-value'));
  const ac = new AbortController();
  const pending = tp.setTimeout(1000, 'never', { signal: ac.signal });
  ac.abort();
  try { await pending; } catch (x) { order.push(x.name + ' ' + x.code); }
  out.timers = [order, typeof require('timers').setTimeout, typeof require('node:timers').setImmediate];

  out.process = [typeof process.nextTick, process.platform, typeof process.hrtime(), process.hrtime().length,
    typeof process.hrtime.bigint(), typeof process.cwd(), typeof process.env, typeof process.memoryUsage().heapUsed,
    typeof process.on, typeof process.exit, require('process') === process];
  return out;
};
