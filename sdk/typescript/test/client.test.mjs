// @chidori/client against a real `chidori serve` (test/serve.mjs starts it).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import net from "node:net";
import path from "node:path";

import {
  BadRequest, ChidoriError, Client, Conflict, NotFound, ProtocolError, Timeout, TooManyRequests, Unauthorized, Unavailable,
} from "../dist/index.js";
import { REPO, answer, rawServer, startServer } from "./serve.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe("sessions", () => {
  let srv, c;
  before(async () => { srv = await startServer(); c = new Client({ baseUrl: srv.url, timeoutMs: 60000 }); });
  after(async () => { c.close(); await srv.stop(); });

  test("health and ready", async () => {
    assert.deepEqual(await c.health(), { status: "ok" });
    assert.equal(await c.ready(), true);
  });

  test("run waits and passes values through", async () => {
    const value = { n: 1.5, big: 12345678901234, list: [1, "two", null, true], nested: { a: { b: [] } } };
    const s = await c.run(value);
    assert.equal(s.status, "done");
    assert.deepEqual(s.result, { echo: value });
    assert.equal(s.exit, 0);
    assert.equal(s.tenant, "default");
    assert.equal(typeof s.stats.wall_ms, "number");
    assert.match(s.id, /^s[0-9a-f]+$/);
  });

  test("policyProfile is sent; an unknown one is BadRequest unknown_profile", async () => {
    const s = await c.run({ write: 1 }, { policyProfile: "untrusted" });
    assert.equal(s.policy_profile, "untrusted");
    assert.equal(s.result.wrote, "EPOLICY");
    await assert.rejects(c.run({}, { policyProfile: "nosuch" }), (e) =>
      e instanceof BadRequest && e instanceof ChidoriError && e.status === 400 && e.code === "unknown_profile" &&
      e.message.includes("nosuch"));
  });

  test("a failed agent", async () => {
    const s = await c.run({ fail: "it broke" });
    assert.equal(s.status, "failed");
    assert.equal(s.error.name, "Error");
    assert.match(s.error.message, /it broke/);
    assert.notEqual(s.exit, 0);
  });

  test("create returns at once; get follows it", async () => {
    const s = await c.sessions.create({ sleep: 1500 });
    assert.ok(["queued", "running"].includes(s.status));
    let got = await c.sessions.get(s.id);
    const deadline = Date.now() + 60000;
    while (got.status === "queued" || got.status === "running") {
      assert.ok(Date.now() < deadline);
      await sleep(100);
      got = await c.sessions.get(s.id);
    }
    assert.equal(got.status, "done");
  });

  test("run re-polls past the server's wait_ms", async () => {
    const c2 = new Client({ baseUrl: srv.url, waitMs: 200 });
    const t0 = Date.now();
    const s = await c2.run({ sleep: 2000 });
    assert.equal(s.status, "done");
    assert.ok(Date.now() - t0 >= 1900);
  });

  test("a session that never settles: Timeout with its id, bounded", async () => {
    const c2 = new Client({ baseUrl: srv.url, timeoutMs: 2000 });
    const t0 = Date.now();
    let sid;
    await assert.rejects(c2.run({ sleep: 30000 }), (e) => {
      sid = e.sessionId;
      return e instanceof Timeout && e.code === "timeout" && /did not settle/.test(e.message) && !!sid;
    });
    assert.ok(Date.now() - t0 < 10000);
    assert.equal((await c.sessions.cancel(sid)).status, "cancelled");
  });

  test("AbortSignal aborts a waiting run with the signal's reason", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("stop it")), 300);
    const t0 = Date.now();
    await assert.rejects(c.run({ sleep: 5000 }, { signal: ac.signal }), /stop it/);
    assert.ok(Date.now() - t0 < 4000);
    const pre = AbortSignal.abort(new Error("already"));
    await assert.rejects(c.health({ signal: pre }), /already/);
  });

  test("approval and input flow", async () => {
    let s = await c.run({ write: 1, ask: "your name?" }, { policyProfile: "supervised" });
    assert.equal(s.status, "awaitingapproval");
    const pa = s.pending_approval;
    assert.deepEqual([pa.id, pa.target, pa.args.path], [1, "workspace:write", "a.txt"]);
    assert.match(pa.reason, /needs approval/);
    await assert.rejects(c.sessions.input(s.id, "early"), (e) => e instanceof Conflict && e.status === 409 && e.code === "conflict");
    await assert.rejects(c.sessions.approve(s.id, "allow", { approvalId: 7 }), Conflict);
    await assert.rejects(c.sessions.approve(s.id, "yes"), TypeError);
    s = await c.sessions.approve(s.id, "allow", { approvalId: 1 });
    assert.equal(s.status, "awaitinginput");
    assert.equal(s.pending_input.prompt, "your name?");
    s = await c.sessions.input(s.id, { name: "bob", n: 2 });
    assert.equal(s.status, "done");
    assert.equal(s.result.wrote, "written");
    assert.deepEqual(s.result.answer, { name: "bob", n: 2 });
  });

  test("deny", async () => {
    let s = await c.run({ write: 1 }, { policyProfile: "supervised" });
    s = await c.sessions.approve(s.id, "deny");
    assert.equal(s.status, "done");
    assert.equal(s.result.wrote, "EPOLICY");
  });

  test("replay and journal", async () => {
    let s = await c.run({ write: 1 }, { policyProfile: "supervised" });
    s = await c.sessions.approve(s.id, "allow");
    const r = await c.sessions.replay(s.id);
    assert.equal(r.matched, true);
    assert.deepEqual(r.result, s.result);
    const lines = [];
    for await (const l of c.sessions.journal(s.id)) lines.push(l);
    assert.equal(lines[0].type, "header");
    assert.deepEqual(lines[0].input, { write: 1 });
    assert.equal(lines.at(-1).type, "end");
    assert.ok(lines.some((l) => l.op === "workspace.write"));
  });

  test("cancel and delete", async () => {
    let s = await c.sessions.create({ sleep: 30000 });
    s = await c.sessions.cancel(s.id);
    assert.equal(s.status, "cancelled");
    assert.equal(s.error.name, "Cancelled");
    await assert.rejects(c.sessions.cancel(s.id), Conflict);
    assert.equal(await c.sessions.delete(s.id), undefined);
    await assert.rejects(c.sessions.get(s.id), (e) => e instanceof NotFound && e.status === 404 && e.code === "not_found");
    await assert.rejects(c.sessions.delete(s.id), NotFound);
  });

  test("list iterates every page", async () => {
    const tag = randomUUID();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await c.run({ tag, i })).id);
    const got = [];
    for await (const s of c.sessions.list({ pageSize: 2 })) got.push(s.id);
    assert.deepEqual(got.filter((i) => ids.includes(i)), [...ids].reverse());
    let n = 0;
    for await (const _ of c.sessions.list({ limit: 3, pageSize: 2 })) n++;
    assert.equal(n, 3);
    for await (const s of c.sessions.list({ status: "done", limit: 20 })) assert.equal(s.status, "done");
    await assert.rejects(async () => { for await (const _ of c.sessions.list({ status: "nosuch" })); },
      (e) => e instanceof BadRequest && e.code === "invalid_field");
  });

  test("stream yields typed events up to done", async () => {
    const evs = [];
    for await (const e of c.stream({ log: "hello from the agent" })) evs.push(e);
    assert.equal(evs[0].event, "status");
    assert.equal(evs[0].data.status, "running");
    assert.deepEqual(evs.filter((e) => e.event === "log").map((e) => e.data), [{ level: "info", message: "hello from the agent" }]);
    const last = evs.at(-1);
    assert.equal(last.event, "done");
    assert.deepEqual(last.data.result, { echo: { log: "hello from the agent" } });
    assert.deepEqual(evs.map((e) => e.id), evs.map((_, i) => i + 1));
  });

  test("leaving a stream early closes it; the session goes on", async () => {
    let id;
    for await (const e of c.stream({ sleep: 1000 })) { id = e.data.id; break; }
    assert.match(id, /^s/);
    const s = await c.run({ after: 1 });
    assert.equal(s.status, "done");
    let last;
    for await (const e of c.events(id)) last = e;
    assert.equal(last.event, "done");
  });

  test("events of a pause, and after an id", async () => {
    const s = await c.run({ write: 1 }, { policyProfile: "supervised" });
    const evs = [];
    for await (const e of c.events(s.id)) evs.push(e);
    assert.deepEqual(evs.map((e) => e.event), ["status", "call", "approval", "status"]);
    assert.deepEqual([evs[1].data.op, evs[1].data.decision], ["workspace.write", "pending"]);
    assert.equal(evs[2].data.target, "workspace:write");
    assert.equal(evs[3].data.status, "awaitingapproval");
    const ids = [];
    for await (const e of c.events(s.id, { lastEventId: 2 })) ids.push(e.id);
    assert.deepEqual(ids, [3, 4]);
    await c.sessions.approve(s.id, "allow");
    const rest = [];
    for await (const e of c.events(s.id, { lastEventId: 4 })) rest.push(e);
    assert.equal(rest[0].id, 5);
    assert.equal(rest.at(-1).event, "done");
  });

  test("Idempotency-Key", async () => {
    const key = randomUUID();
    const a = await c.run({ k: 1 }, { idempotencyKey: key });
    const b = await c.run({ k: 2 }, { idempotencyKey: key });
    assert.equal(a.id, b.id);
    assert.deepEqual(b.result, { echo: { k: 1 } });
  });
});

describe("tokens", () => {
  let srv;
  before(async () => { srv = await startServer({ env: { CHIDORI_SERVE_TOKEN: "s3cret-token" } }); });
  after(async () => { await srv.stop(); });

  test("a wrong or missing token is Unauthorized; probes need none", async () => {
    const c = new Client({ baseUrl: srv.url, token: "wrong" });
    await assert.rejects(c.run({}), (e) => e instanceof Unauthorized && e.status === 401 && e.code === "unauthorized");
    assert.deepEqual(await c.health(), { status: "ok" });
    const old = process.env.CHIDORI_SERVE_TOKEN;
    delete process.env.CHIDORI_SERVE_TOKEN;
    try {
      await assert.rejects(new Client({ baseUrl: srv.url }).sessions.get("s0"), Unauthorized);
    } finally {
      if (old !== undefined) process.env.CHIDORI_SERVE_TOKEN = old;
    }
  });

  test("the token from CHIDORI_SERVE_TOKEN", async () => {
    process.env.CHIDORI_SERVE_TOKEN = "s3cret-token";
    try {
      assert.deepEqual((await new Client({ baseUrl: srv.url }).run({ a: 1 })).result, { echo: { a: 1 } });
    } finally {
      delete process.env.CHIDORI_SERVE_TOKEN;
    }
  });
});

describe("retries", () => {
  let srv;
  before(async () => { srv = await startServer({ args: ["--max-running", "1", "--max-queued", "0"] }); });
  after(async () => { await srv.stop(); });

  test("429 is retried honouring Retry-After, a bounded number of times", async () => {
    const c0 = new Client({ baseUrl: srv.url, retries: 0 });
    const busy = await c0.sessions.create({ sleep: 2500 });
    await assert.rejects(c0.run({ x: 1 }), (e) =>
      e instanceof TooManyRequests && e.status === 429 && e.code === "queue_full" && e.retryAfter === 1);
    const c10 = new Client({ baseUrl: srv.url, retries: 10 });
    const t0 = Date.now();
    const s = await c10.run({ x: 2 });
    assert.deepEqual(s.result, { echo: { x: 2 } });
    assert.ok(Date.now() - t0 >= 900);
    assert.equal((await c10.sessions.get(busy.id)).status, "done");
    const c1 = new Client({ baseUrl: srv.url, retries: 1 });
    const busy2 = await c1.sessions.create({ sleep: 20000 });
    const t1 = Date.now();
    await assert.rejects(c1.run({ x: 3 }), TooManyRequests);
    assert.ok(Date.now() - t1 < 10000);
    await c1.sessions.cancel(busy2.id);
  });
});

describe("unix socket", () => {
  test("every call over unix:PATH (node:http socketPath)", async () => {
    const srv = await startServer({ unix: true });
    const c = new Client({ baseUrl: srv.url });
    try {
      assert.match(srv.url, /^unix:\//);
      assert.deepEqual(await c.health(), { status: "ok" });
      assert.deepEqual((await c.run({ u: 1 })).result, { echo: { u: 1 } });
      const evs = [];
      for await (const e of c.stream({})) evs.push(e);
      assert.equal(evs.at(-1).event, "done");
    } finally {
      c.close();
      await srv.stop();
    }
  });
});

describe("example", () => {
  test("examples/supervised.mjs prints the approval, approves, prints the result", async () => {
    const srv = await startServer({ agent: path.join(REPO, "sdk/examples/note.js") });
    try {
      const r = spawnSync(process.execPath, [path.join(REPO, "sdk/typescript/examples/supervised.mjs"), srv.url],
        { encoding: "utf8", timeout: 120000 });
      assert.equal(r.status, 0, r.stdout + r.stderr);
      const lines = r.stdout.split("\n");
      assert.equal(lines[0], "pending approval 1: workspace:write note.txt");
      assert.match(lines[1], /needs approval/);
      assert.equal(lines[2], "approved");
      assert.match(lines[3], /^session s[0-9a-f]+ done: \{"saved":"note.txt","bytes":8\}$/);
    } finally {
      await srv.stop();
    }
  });
});

describe("bad answers: a typed error with a clear message, never a hang", () => {
  test("unreachable", async () => {
    const probe = net.createServer();
    await new Promise((r) => probe.listen(0, "127.0.0.1", r));
    const port = probe.address().port;
    await new Promise((r) => probe.close(r));
    await assert.rejects(new Client({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 5000 }).health(), (e) =>
      e instanceof Unavailable && e.code === "unreachable" && e.status === undefined &&
      e.message.includes(`cannot reach chidori serve at http://127.0.0.1:${port}`));
    await assert.rejects(new Client({ baseUrl: "unix:/nonexistent/chidori.sock" }).health(), (e) =>
      e instanceof Unavailable && e.message.includes("unix:/nonexistent/chidori.sock"));
  });

  test("a bad base URL", () => {
    assert.throws(() => new Client({ baseUrl: "ftp://x" }), TypeError);
    assert.throws(() => new Client({ baseUrl: "unix:" }), TypeError);
  });

  test("HTML from a proxy", async () => {
    const page = "<html><body><h1>502 Bad Gateway</h1></body></html>";
    let srv = await rawServer((s) => s.end(answer("502 Bad Gateway", "text/html", page)));
    try {
      await assert.rejects(new Client({ baseUrl: srv.url, timeoutMs: 5000 }).sessions.get("s1"), (e) =>
        e instanceof Unavailable && e.status === 502 && e.code === undefined &&
        e.message.includes("not chidori serve's JSON error (text/html)") && e.message.includes("502 Bad Gateway"));
    } finally { await srv.stop(); }
    srv = await rawServer((s) => s.end(answer("200 OK", "text/html", page)));
    try {
      await assert.rejects(new Client({ baseUrl: srv.url, timeoutMs: 5000 }).sessions.get("s1"), (e) =>
        e instanceof ProtocolError && e.code === "not_json" && e.message.includes("expected JSON from chidori serve, got text/html"));
    } finally { await srv.stop(); }
  });

  test("a body that is not JSON", async () => {
    const srv = await rawServer((s) => s.end(answer("200 OK", "application/json", "{\"id\": ")));
    try {
      await assert.rejects(new Client({ baseUrl: srv.url, timeoutMs: 5000 }).health(), (e) =>
        e instanceof ProtocolError && e.message.includes("not valid JSON"));
    } finally { await srv.stop(); }
  });

  test("503 is retried, then raised", async () => {
    const srv = await rawServer((s) => s.end(answer("503 Service Unavailable", "text/html", "<h1>down</h1>", "Retry-After: 0\r\n")));
    try {
      await assert.rejects(new Client({ baseUrl: srv.url, timeoutMs: 10000, retries: 2 }).run({}), (e) =>
        e instanceof Unavailable && e.status === 503);
      assert.equal(srv.requests.length, 3);
    } finally { await srv.stop(); }
  });

  test("a silent server times out", async () => {
    const srv = await rawServer(() => {});
    try {
      const t0 = Date.now();
      await assert.rejects(new Client({ baseUrl: srv.url, timeoutMs: 1000 }).health(), (e) =>
        e instanceof Timeout && e.code === "timeout");
      assert.ok(Date.now() - t0 < 5000);
    } finally { await srv.stop(); }
  });

  test("a cut stream is reopened after the last event", async () => {
    const sid = "s01a2329f41b4ec49e7fcfe3ef9ee";
    const running = JSON.stringify({ id: sid, status: "running" });
    const done = JSON.stringify({ id: sid, status: "done", result: { ok: true } });
    const sse = (st) => `HTTP/1.1 ${st}\r\nContent-Type: text/event-stream\r\nLocation: /sessions/${sid}\r\nConnection: close\r\n\r\n`;
    const srv = await rawServer((s, head) => {
      if (head.startsWith("POST /sessions/stream")) {
        s.end(sse("201 Created") + `id: 1\nevent: status\ndata: ${running}\n\nid: 2\nevent: lo`);
      } else if (/last-event-id: 1\r\n/i.test(head)) {
        s.end(sse("200 OK") + `id: 2\nevent: log\ndata: {"level":"info","message":"m"}\n\n: keep-alive\n\nid: 3\nevent: done\ndata: ${done}\n\n`);
      } else s.destroy();
    });
    try {
      const evs = [];
      for await (const e of new Client({ baseUrl: srv.url, timeoutMs: 10000 }).stream({})) evs.push(e);
      assert.deepEqual(evs.map((e) => [e.id, e.event]), [[1, "status"], [2, "log"], [3, "done"]]);
      assert.deepEqual(evs[2].data.result, { ok: true });
    } finally { await srv.stop(); }
  });

  test("a stream cut for good is a ProtocolError", async () => {
    const sid = "s01a2329f41b4ec49e7fcfe3ef9ee";
    const srv = await rawServer((s, head) => {
      if (head.startsWith(`GET /sessions/${sid} `)) s.end(answer("200 OK", "application/json", JSON.stringify({ id: sid, status: "running" })));
      else s.end("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nid: 1\n");
    });
    try {
      await assert.rejects(async () => { for await (const _ of new Client({ baseUrl: srv.url, timeoutMs: 20000 }).events(sid)); },
        (e) => e instanceof ProtocolError && e.code === "truncated" &&
          e.message.includes("ended 4 times without an event while it is running"));
    } finally { await srv.stop(); }
  });
});
