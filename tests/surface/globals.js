// tests/surface/globals.js — the web globals and Buffer; node is the oracle
// (tests/bats/surface.bats).  Only what is the same on both sides.
module.exports = async function () {
  const out = {};
  out.types = ['Buffer', 'EventTarget', 'Event', 'CustomEvent', 'Blob', 'File', 'FormData', 'ReadableStream',
    'WritableStream', 'TransformStream', 'TextEncoderStream', 'TextDecoderStream', 'ByteLengthQueuingStrategy',
    'CountQueuingStrategy', 'ReadableStreamDefaultReader', 'setImmediate', 'clearImmediate', 'structuredClone',
    'queueMicrotask', 'process'].map((n) => typeof globalThis[n]);
  out.buffer = [Buffer === require('buffer').Buffer, Buffer.from([1, 2, 3]).toString('base64'), Buffer.from('x').buffer instanceof ArrayBuffer];

  const et = new EventTarget();
  const log = [];
  const h = (e) => log.push(['fn', e.type, e.target === et, e.eventPhase, e.detail]);
  et.addEventListener('ping', h);
  et.addEventListener('ping', h);  // the same listener once
  et.addEventListener('ping', { handleEvent(e) { log.push(['obj', e.type]); } }, { once: true });
  et.dispatchEvent(new CustomEvent('ping', { detail: { n: 1 } }));
  et.dispatchEvent(new Event('ping'));
  et.removeEventListener('ping', h);
  et.dispatchEvent(new Event('ping'));
  const ev = new Event('c', { cancelable: true });
  et.addEventListener('c', (e) => e.preventDefault());
  const notCanceled = et.dispatchEvent(ev);
  const ac = new AbortController();
  et.addEventListener('s', () => log.push('s'), { signal: ac.signal });
  et.dispatchEvent(new Event('s'));
  ac.abort();
  et.dispatchEvent(new Event('s'));
  const stop = [];
  et.addEventListener('t', (e) => { stop.push(1); e.stopImmediatePropagation(); });
  et.addEventListener('t', () => stop.push(2));
  et.dispatchEvent(new Event('t'));
  out.events = [log, notCanceled, ev.defaultPrevented, stop, new Event('x').bubbles, Event.AT_TARGET,
    Object.prototype.toString.call(new CustomEvent('y')), new CustomEvent('y').detail];

  const blob = new Blob(['ab', new Uint8Array([99, 100]), new Blob(['é'])], { type: 'Text/Plain' });
  const file = new File(['hello'], 'h.txt', { type: 'text/plain', lastModified: 42 });
  const parts = [];
  for await (const c of blob.stream()) parts.push(...c);
  out.blob = [blob.size, blob.type, await blob.text(), await blob.slice(1, 3).text(), await blob.slice(-2).text(),
    [...new Uint8Array(await blob.arrayBuffer())], parts, file.name, file.lastModified, file.size, file instanceof Blob,
    Object.prototype.toString.call(file), new Blob().size, new Blob(['a'], {}).type];

  const fd = new FormData();
  fd.append('a', '1');
  fd.append('a', '2');
  fd.append('f', new Blob(['x']), 'x.bin');
  fd.set('b', 'only');
  const fdEntries = [];
  for (const [k, v] of fd) fdEntries.push([k, typeof v === 'string' ? v : [v.name, v.size, Object.prototype.toString.call(v)]]);
  fd.delete('a');
  out.formdata = [fdEntries, fd.getAll('a'), fd.has('b'), fd.get('f').name, [...fd.keys()]];

  const rs = new ReadableStream({
    start(c) { c.enqueue('a'); c.enqueue('b'); c.close(); },
  });
  const up = rs.pipeThrough(new TransformStream({ transform(ch, c) { c.enqueue(ch.toUpperCase()); } }));
  const collected = [];
  await up.pipeTo(new WritableStream({ write(ch) { collected.push(ch); } }));
  const [t1, t2] = new ReadableStream({ start(c) { c.enqueue(1); c.close(); } }).tee();
  const r1 = await t1.getReader().read(), r2 = await t2.getReader().read();
  const dec = [];
  const bytes = new TextEncoder().encode('héllo → wörld');
  const src = new ReadableStream({ start(c) { for (let i = 0; i < bytes.length; i += 3) c.enqueue(bytes.slice(i, i + 3)); c.close(); } });
  for await (const s of src.pipeThrough(new TextDecoderStream())) dec.push(s);
  const enc = [];
  const es = new ReadableStream({ start(c) { c.enqueue('hé'); c.enqueue('llo'); c.close(); } }).pipeThrough(new TextEncoderStream());
  for await (const b of es) enc.push([...b]);
  const byob = new ReadableStream({ type: 'bytes', start(c) { c.enqueue(new Uint8Array([1, 2, 3])); c.close(); } });
  const br = byob.getReader({ mode: 'byob' });
  const bread = await br.read(new Uint8Array(8));
  out.streams = [collected, r1, r2, dec.join(''), enc, [...bread.value], new TextDecoderStream().encoding,
    new CountQueuingStrategy({ highWaterMark: 3 }).highWaterMark];

  const order = [];
  setImmediate((a) => order.push('immediate ' + a), 'x');
  const im = setImmediate(() => order.push('cleared'));
  clearImmediate(im);
  // An immediate queued after them runs after them (a timer could fire
  // first in node on a loaded machine: its timers phase comes before).
  await new Promise((r) => setImmediate(r));
  out.immediate = order;
  out.clone = [structuredClone(new Map([[1, { a: [2] }]])).get(1).a[0]];
  out.response = [await new Response(new Blob(['bl'])).text(),
    [...(await new Response('a=1&b=%20x', { headers: { 'content-type': 'application/x-www-form-urlencoded' } }).formData())],
    (await new Response('zz').blob()).size];
  return out;
};
