// Property tests (fast-check) of what the SDK parses from a server: the event
// stream (text/event-stream).  Issue 16: parsers of hostile input are fuzzed;
// libFuzzer does not reach JavaScript, so fast-check generates the inputs.
// FC_RUNS=N runs more examples than the default 300 per property.
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";

import { SSEParser } from "../dist/sse.js";

const RUNS = Number(process.env.FC_RUNS || 300);
const enc = new TextEncoder();

const cutAt = (bytes, cuts) => {
  const offs = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out = [];
  let prev = 0;
  for (const o of [...offs, bytes.length]) { out.push(bytes.slice(prev, o)); prev = o; }
  return out;
};

const parseAll = (chunks, max) => {
  const p = new SSEParser(max);
  const out = [];
  for (const c of chunks) out.push(...p.feed(c));
  return out;
};

// Field text: anything but the line endings (a value cannot hold them).
const fieldText = fc.string({ unit: "grapheme", maxLength: 30 }).map((s) => s.replace(/[\r\n]/g, ""));
const eventArb = fc.record({
  name: fc.option(fieldText.filter((s) => s !== "" && !s.startsWith(" "))),
  data: fc.array(fieldText, { minLength: 1, maxLength: 4 }),
  id: fc.option(fieldText.filter((s) => !s.includes("\0"))),
  comment: fc.boolean(),
});

test("events come back whatever the line endings (LF, CRLF, CR) and however the bytes are cut", () => {
  fc.assert(fc.property(
    fc.array(eventArb, { maxLength: 6 }),
    fc.array(fc.constantFrom("\n", "\r\n", "\r"), { minLength: 1, maxLength: 8 }),
    fc.array(fc.nat(), { maxLength: 12 }),
    fc.boolean(),
    (events, endings, cuts, bom) => {
      let wire = bom ? "\ufeff" : "";
      let k = 0, lastId = null;
      const end = () => {
        let e = endings[++k % endings.length];
        if (e === "\n" && wire.endsWith("\r")) e = "\r\n"; // CR then LF is one ending (CRLF)
        return e;
      };
      const want = [];
      for (const ev of events) {
        if (ev.comment) wire += ": keep-alive" + end();
        if (ev.name !== null) wire += "event: " + ev.name + end();
        if (ev.id !== null) { wire += "id: " + ev.id + end(); lastId = ev.id; }
        for (const d of ev.data) wire += "data: " + d + end();
        wire += end();
        want.push({ id: lastId, event: ev.name ?? "message", data: ev.data.join("\n") });
      }
      assert.deepEqual(parseAll(cutAt(enc.encode(wire), cuts)), want);
    }), { numRuns: RUNS });
});

test("any bytes parse the same however they are cut, and nothing but the size limit throws", () => {
  const piece = fc.oneof(
    fc.uint8Array({ maxLength: 40 }),
    fc.constantFrom("data: x", "event:e", "id: 1", ":c", "\r", "\n", "\r\n", "\ufeff", "x".repeat(30)).map((s) => enc.encode(s)),
  );
  fc.assert(fc.property(fc.array(piece, { maxLength: 30 }), fc.array(fc.nat(), { maxLength: 12 }), (pieces, cuts) => {
    const bytes = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of pieces) { bytes.set(p, o); o += p.length; }
    const outcome = (chunks) => {
      try { return parseAll(chunks, 64); } catch (e) {
        assert.ok(e instanceof RangeError, `threw ${e}`);
        assert.match(e.message, /larger than 64 bytes/);
        return "refused";
      }
    };
    // UTF-8 cut inside a character decodes the same (the decoder streams).
    assert.deepEqual(outcome(cutAt(bytes, cuts)), outcome([bytes]));
  }), { numRuns: RUNS });
});

test("a line that never ends is refused past the limit, not kept", () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 64 }), (n, chunk) => {
    const p = new SSEParser(100);
    const data = enc.encode("data: " + "x".repeat(n * 2));
    let threw = false;
    try {
      for (let at = 0; at < data.length; at += chunk) p.feed(data.slice(at, at + chunk));
    } catch (e) {
      assert.ok(e instanceof RangeError);
      threw = true;
    }
    assert.equal(threw, data.length > 100);
  }), { numRuns: RUNS });
});
