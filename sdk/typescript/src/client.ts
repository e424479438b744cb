/** The client of `chidori serve`'s HTTP API (docs/serve.md). */

import {
  ChidoriError, ProtocolError, Timeout, Unavailable, errorForStatus,
} from "./errors.js";
import { SSEParser } from "./sse.js";
import { fetchTransport, unixTransport, type Transport, type TransportResponse } from "./transport.js";
import {
  EVENT_TYPES, SETTLED, type ChidoriEvent, type ReplayResult, type Session,
} from "./types.js";

export interface ClientOptions {
  /** `http://HOST:PORT` (a path prefix is kept), `https://...`, or `unix:/path` (Node only). */
  baseUrl?: string;
  /** The bearer token; default `CHIDORI_SERVE_TOKEN` from the environment (Node). */
  token?: string;
  /** Milliseconds any one call may take, waiting included (default 60000). */
  timeoutMs?: number;
  /** How many times a 429 or 503 answer is retried (default 3); nothing else is. */
  retries?: number;
  /** The longest wait between two tries, whatever Retry-After says (default 30000). */
  maxRetryWaitMs?: number;
  /** The longest a request asks the server to wait for a session (its `wait_ms`, at most 600000). */
  waitMs?: number;
  /** The largest answer read whole (default 256 MiB). */
  maxResponseBytes?: number;
  /** Another fetch (tests, instrumented ones). */
  fetch?: typeof fetch;
}

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the call: it rejects with the signal's reason. */
  signal?: AbortSignal;
  /** This call's timeout instead of the client's. */
  timeoutMs?: number;
}

export interface RunOptions extends CallOptions {
  policyProfile?: string;
  /** Resolve once the session settled (default true), re-polling until the timeout. */
  wait?: boolean;
  idempotencyKey?: string;
}

export interface ResumeOptions extends CallOptions { wait?: boolean }
export interface ApproveOptions extends ResumeOptions { approvalId?: number }
export interface ListOptions extends CallOptions { status?: string; limit?: number; pageSize?: number }
export interface StreamOptions extends CallOptions { policyProfile?: string }
export interface EventsOptions extends CallOptions { lastEventId?: number }

const PAUSED = new Set(["awaitingapproval", "awaitinginput"]);
const SNIPPET = 200;

function snippet(text: string): string {
  const s = text.slice(0, SNIPPET).replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
  return JSON.stringify(s) + (text.length > SNIPPET ? "..." : "");
}

function retryAfter(v: string | null): number | undefined {
  if (!v) return undefined;
  v = v.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, (t - Date.now()) / 1000);
}

function envToken(): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env?.CHIDORI_SERVE_TOKEN || undefined;
}

/** A deadline and the caller's signal, as one signal; `check` turns an abort into the right error. */
class Deadline {
  readonly controller = new AbortController();
  readonly at: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timedOut = false;
  private readonly onAbort = () => this.controller.abort(this.user?.reason);

  constructor(ms: number, private readonly user?: AbortSignal) {
    this.at = Date.now() + ms;
    if (user?.aborted) this.controller.abort(user.reason);
    user?.addEventListener("abort", this.onAbort, { once: true });
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort(new Timeout("the client's timeout passed", { code: "timeout" }));
    }, ms);
  }

  get signal(): AbortSignal { return this.controller.signal; }
  get left(): number { return this.at - Date.now(); }

  /** The error to throw for a failure while this deadline was running. */
  fail(e: unknown, what: string): unknown {
    if (e instanceof Timeout) return e;
    if (this.timedOut) return new Timeout(`${what}: no answer within the client's timeout`, { code: "timeout" });
    if (this.user?.aborted) return this.user.reason;
    return e;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.signal.aborted) { reject(this.signal.reason); return; }
      const t = setTimeout(() => { this.signal.removeEventListener("abort", ab); resolve(); }, ms);
      const ab = () => { clearTimeout(t); reject(this.signal.reason); };
      this.signal.addEventListener("abort", ab, { once: true });
    });
  }

  done(): void {
    clearTimeout(this.timer);
    this.user?.removeEventListener("abort", this.onAbort);
  }
}

interface Answer { status: number; statusText: string; header(n: string): string | null; text: string }

/** `client.sessions`: everything about one session. */
export class Sessions {
  constructor(private readonly c: Client) {}

  /** Creates a session and resolves at once (queued or running). */
  create(input: unknown, opts: Omit<RunOptions, "wait"> = {}): Promise<Session> {
    return this.c.run(input, { ...opts, wait: false });
  }

  get(id: string, opts: CallOptions = {}): Promise<Session> {
    return this.c.withDeadline(opts, (d) => this.c.getIn(id, d));
  }

  /** The sessions, newest first, page after page (`limit`: at most this many in all). */
  async *list(opts: ListOptions = {}): AsyncGenerator<Session> {
    const pageSize = opts.pageSize ?? 100;
    if (opts.limit !== undefined && !(opts.limit >= 1)) throw new RangeError("limit must be 1 or more");
    if (!(pageSize >= 1 && pageSize <= 1000)) throw new RangeError("pageSize must be from 1 to 1000");
    let after: string | null = null;
    let given = 0;
    for (;;) {
      const q = new URLSearchParams();
      q.set("limit", String(opts.limit === undefined ? pageSize : Math.min(pageSize, opts.limit - given)));
      if (opts.status !== undefined) q.set("status", opts.status);
      if (after) q.set("after", after);
      const path = `/sessions?${q}`;
      const doc = await this.c.withDeadline(opts, async (d) =>
        this.c.json(await this.c.call("GET", path, d), `GET ${path}`));
      if (!doc || typeof doc !== "object" || !Array.isArray((doc as { sessions?: unknown }).sessions)) {
        throw new ProtocolError(`GET ${path}: expected {"sessions": [...], "next": ...}`, { status: 200, code: "not_a_list" });
      }
      for (const s of (doc as { sessions: Session[] }).sessions) {
        yield s;
        given++;
        if (opts.limit !== undefined && given >= opts.limit) return;
      }
      after = (doc as { next?: string | null }).next ?? null;
      if (!after) return;
    }
  }

  /** Answers the pending approval and resumes the session. */
  approve(id: string, decision: "allow" | "deny", opts: ApproveOptions = {}): Promise<Session> {
    if (decision !== "allow" && decision !== "deny") {
      return Promise.reject(new TypeError(`decision must be "allow" or "deny", not ${JSON.stringify(decision)}`));
    }
    const body: Record<string, unknown> = { decision };
    if (opts.approvalId !== undefined) body.approval_id = opts.approvalId;
    return this.c.resume(id, "approve", body, opts);
  }

  /** Answers the pending `chidori.input()` with `value` and resumes the session. */
  input(id: string, value: unknown, opts: ResumeOptions = {}): Promise<Session> {
    return this.c.resume(id, "input", { value }, opts);
  }

  /** Runs the agent again from the session's journal, performing nothing. */
  replay(id: string, opts: CallOptions = {}): Promise<ReplayResult> {
    const path = `/sessions/${Client.sid(id)}/replay`;
    return this.c.withDeadline(opts, async (d) => {
      const doc = this.c.json(await this.c.call("POST", path, d, { body: {} }), `POST ${path}`) as ReplayResult;
      if (!doc || typeof doc.matched !== "boolean") {
        throw new ProtocolError(`POST ${path}: expected {"matched": ..., "result": ...}`, { status: 200, code: "not_a_replay" });
      }
      return doc;
    });
  }

  cancel(id: string, opts: CallOptions = {}): Promise<Session> {
    const path = `/sessions/${Client.sid(id)}/cancel`;
    return this.c.withDeadline(opts, async (d) =>
      this.c.session(await this.c.call("POST", path, d, { body: {} }), `POST ${path}`));
  }

  async delete(id: string, opts: CallOptions = {}): Promise<void> {
    const path = `/sessions/${Client.sid(id)}`;
    await this.c.withDeadline(opts, (d) => this.c.call("DELETE", path, d, { ok: [200, 204] }));
  }

  /** The session's journal, one object per line (a header, the calls, an end line). */
  async *journal(id: string, opts: CallOptions = {}): AsyncGenerator<Record<string, unknown>> {
    const path = `/sessions/${Client.sid(id)}/journal`;
    const ans = await this.c.withDeadline(opts, (d) =>
      this.c.call("GET", path, d, { headers: { Accept: "application/x-ndjson" } }));
    const ctype = (ans.header("Content-Type") ?? "").split(";")[0].trim().toLowerCase();
    if (ctype !== "application/x-ndjson") {
      throw new ProtocolError(`GET ${path}: expected application/x-ndjson, got ${ctype || "no content type"}: ${snippet(ans.text)}`,
        { status: ans.status, code: "not_ndjson" });
    }
    let n = 0;
    for (const line of ans.text.split("\n")) {
      n++;
      if (!line.trim()) continue;
      try {
        yield JSON.parse(line) as Record<string, unknown>;
      } catch (e) {
        throw new ProtocolError(`GET ${path}: line ${n} is not JSON (${(e as Error).message})`, { status: ans.status, code: "not_json" });
      }
    }
  }
}

/** A client of one `chidori serve`. */
export class Client {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly maxRetryWaitMs: number;
  readonly waitMs: number;
  readonly maxResponseBytes: number;
  readonly sessions: Sessions;
  private readonly token?: string;
  private readonly transport: Transport;
  private readonly closeTransport: () => void;
  private readonly prefix: string;

  constructor(opts: ClientOptions = {}) {
    this.baseUrl = opts.baseUrl ?? "http://127.0.0.1:8080";
    this.timeoutMs = opts.timeoutMs ?? 60000;
    this.retries = opts.retries ?? 3;
    this.maxRetryWaitMs = opts.maxRetryWaitMs ?? 30000;
    this.waitMs = opts.waitMs ?? 600000;
    this.maxResponseBytes = opts.maxResponseBytes ?? 256 * 1024 * 1024;
    if (!(this.timeoutMs > 0)) throw new RangeError("timeoutMs must be a positive number of milliseconds");
    if (!(this.retries >= 0)) throw new RangeError("retries must be 0 or more");
    if (!(this.waitMs >= 0 && this.waitMs <= 600000)) throw new RangeError("waitMs must be from 0 to 600000 (the server's bound)");
    this.token = opts.token ?? envToken();
    this.sessions = new Sessions(this);
    if (this.baseUrl.startsWith("unix:")) {
      let path = this.baseUrl.slice("unix:".length);
      if (path.startsWith("//")) path = path.slice(2);
      if (!path) throw new TypeError(`baseUrl ${JSON.stringify(this.baseUrl)}: expected unix:/path/to/socket`);
      const u = unixTransport(path);
      this.transport = u.transport;
      this.closeTransport = u.close;
      this.prefix = "";
    } else {
      let u: URL;
      try { u = new URL(this.baseUrl); } catch { u = new URL("invalid:"); }
      if (u.protocol !== "http:" && u.protocol !== "https:") {
        throw new TypeError(`baseUrl ${JSON.stringify(this.baseUrl)}: expected http://HOST:PORT, https://HOST:PORT or unix:/path`);
      }
      const f = opts.fetch ?? globalThis.fetch;
      if (!f) throw new TypeError("no global fetch: Node 18 or newer, or a browser, or pass { fetch }");
      this.prefix = u.pathname.replace(/\/+$/, "");
      this.transport = fetchTransport(`${u.protocol}//${u.host}${this.prefix}`, f.bind(globalThis));
      this.closeTransport = () => {};
    }
  }

  /** Frees the kept-alive connections (unix sockets). */
  close(): void { this.closeTransport(); }

  /** Creates a session running the server's agent on `input`; with `wait` (default) resolves once it settled. */
  run(input: unknown, opts: RunOptions = {}): Promise<Session> {
    const wait = opts.wait ?? true;
    return this.withDeadline(opts, async (d) => {
      const body: Record<string, unknown> = { input: input === undefined ? null : input };
      if (opts.policyProfile !== undefined) body.policy_profile = opts.policyProfile;
      this.waitFields(body, wait, d);
      const headers: Record<string, string> = {};
      if (opts.idempotencyKey !== undefined) headers["Idempotency-Key"] = opts.idempotencyKey;
      const s = this.session(await this.call("POST", "/sessions", d, { body, headers, ok: [200, 201, 202] }), "POST /sessions");
      return wait ? this.settle(s, d) : s;
    });
  }

  /** Creates a session and yields its events until it settles (`POST /sessions/stream`). */
  async *stream(input: unknown, opts: StreamOptions = {}): AsyncGenerator<ChidoriEvent> {
    const d = new Deadline(opts.timeoutMs ?? this.timeoutMs, opts.signal);
    try {
      const body: Record<string, unknown> = { input: input === undefined ? null : input };
      if (opts.policyProfile !== undefined) body.policy_profile = opts.policyProfile;
      const res = await this.openStream("POST", "/sessions/stream", d, JSON.stringify(body), {});
      const loc = res.header("Location") ?? "";
      const base = `${this.prefix}/sessions/`;
      const id = loc.startsWith(base) ? decodeURIComponent(loc.slice(base.length)) : "";
      if (!id) {
        res.cancel();
        throw new ProtocolError(`POST /sessions/stream: the answer has no Location of the session (${JSON.stringify(loc)})`,
          { status: res.status, code: "no_location" });
      }
      yield* this.eventLoop(id, null, d, res);
    } catch (e) {
      throw d.fail(e, "POST /sessions/stream");
    } finally {
      d.done();
    }
  }

  /** The session's events (recorded ones first, after `lastEventId`), then live ones until it settles;
   * a cut stream is reopened with Last-Event-ID. */
  async *events(id: string, opts: EventsOptions = {}): AsyncGenerator<ChidoriEvent> {
    Client.sid(id);
    const d = new Deadline(opts.timeoutMs ?? this.timeoutMs, opts.signal);
    try {
      yield* this.eventLoop(id, opts.lastEventId ?? null, d, null);
    } catch (e) {
      throw d.fail(e, `GET /sessions/${id}/events`);
    } finally {
      d.done();
    }
  }

  /** `GET /healthz` (no token needed): `{status: "ok"}`. */
  health(opts: CallOptions = {}): Promise<{ status: string }> {
    return this.withDeadline(opts, async (d) =>
      this.json(await this.call("GET", "/healthz", d, { retry: false }), "GET /healthz") as { status: string });
  }

  /** `GET /readyz`: true when ready, false while the server drains (503). */
  ready(opts: CallOptions = {}): Promise<boolean> {
    return this.withDeadline(opts, async (d) => {
      const ans = await this.call("GET", "/readyz", d, { retry: false, ok: [200, 503] });
      this.json(ans, "GET /readyz");
      return ans.status === 200;
    });
  }

  // ------------------------------------------------------------------ internals

  /** @internal */
  static sid(id: string): string {
    if (typeof id !== "string" || id === "") throw new TypeError("a session id is a non-empty string");
    return encodeURIComponent(id);
  }

  /** @internal */
  async withDeadline<T>(opts: CallOptions, f: (d: Deadline) => Promise<T>): Promise<T> {
    const d = new Deadline(opts.timeoutMs ?? this.timeoutMs, opts.signal);
    try {
      return await f(d);
    } catch (e) {
      throw d.fail(e, "the call");
    } finally {
      d.done();
    }
  }

  private where(): string { return this.baseUrl; }

  private headers(extra?: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = { Accept: "application/json" };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    return { ...h, ...extra };
  }

  private async send(method: string, path: string, d: Deadline, body: string | undefined,
                     headers: Record<string, string>): Promise<TransportResponse> {
    const what = `${method} ${path}`;
    const h = this.headers(headers);
    if (body !== undefined) h["Content-Type"] = "application/json";
    try {
      return await this.transport({ method, path, headers: h, body, signal: d.signal });
    } catch (e) {
      if (d.signal.aborted) throw d.fail(e, what);
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      const detail = cause?.code ?? (e as { code?: string }).code ?? cause?.message ?? (e as Error).message;
      throw new Unavailable(`cannot reach chidori serve at ${this.where()}: ${detail} (is it running? is baseUrl right?)`,
        { code: "unreachable" });
    }
  }

  private async readAll(res: TransportResponse, what: string, d: Deadline): Promise<string> {
    const parts: Uint8Array[] = [];
    let n = 0;
    try {
      for await (const c of res.chunks()) {
        n += c.length;
        if (n > this.maxResponseBytes) {
          res.cancel();
          throw new ProtocolError(`${what}: the answer is larger than maxResponseBytes (${this.maxResponseBytes})`,
            { status: res.status, code: "too_large" });
        }
        parts.push(c);
      }
    } catch (e) {
      if (e instanceof ChidoriError) throw e;
      if (d.signal.aborted) throw d.fail(e, what);
      throw new ProtocolError(`${what}: the answer was cut: ${(e as Error).message}`, { status: res.status, code: "truncated" });
    }
    const all = new Uint8Array(n);
    let at = 0;
    for (const p of parts) { all.set(p, at); at += p.length; }
    return new TextDecoder().decode(all);
  }

  private error(what: string, status: number, statusText: string, ctype: string | null, text: string,
                ra: number | undefined): ChidoriError {
    const Cls = errorForStatus(status);
    try {
      const doc = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
      const code = doc.error?.code, message = doc.error?.message;
      if (typeof code === "string" && typeof message === "string") {
        return new Cls(message, { status, code, retryAfter: ra });
      }
    } catch { /* not JSON: below */ }
    const ct = (ctype ?? "no content type").split(";")[0];
    return new Cls(`${what}: HTTP ${status} ${statusText} from ${this.where()}, not chidori serve's JSON error (${ct}): ${snippet(text)}`,
      { status, retryAfter: ra });
  }

  private backoff(attempt: number, ra: number | undefined): number {
    return Math.min(ra !== undefined ? ra * 1000 : 250 * 2 ** attempt, this.maxRetryWaitMs);
  }

  /** @internal One request with the retries of 429 and 503: the answer when its status is in `ok`. */
  async call(method: string, path: string, d: Deadline,
             o: { body?: unknown; headers?: Record<string, string>; ok?: number[]; retry?: boolean } = {}): Promise<Answer> {
    const what = `${method} ${path}`;
    const body = o.body === undefined ? undefined : JSON.stringify(o.body);
    const ok = o.ok ?? [200];
    for (let attempt = 0; ; attempt++) {
      const res = await this.send(method, path, d, body, o.headers ?? {});
      const text = await this.readAll(res, what, d);
      if (ok.includes(res.status)) return { status: res.status, statusText: res.statusText, header: res.header, text };
      const ra = retryAfter(res.header("Retry-After"));
      const err = this.error(what, res.status, res.statusText, res.header("Content-Type"), text, ra);
      if (o.retry !== false && (res.status === 429 || res.status === 503) && attempt < this.retries) {
        const wait = this.backoff(attempt, ra);
        if (wait < d.left) { await d.sleep(wait); continue; }
      }
      throw err;
    }
  }

  /** @internal */
  json(ans: Answer, what: string): unknown {
    const ctype = (ans.header("Content-Type") ?? "").split(";")[0].trim().toLowerCase();
    if (ctype !== "application/json") {
      throw new ProtocolError(`${what}: expected JSON from chidori serve, got ${ctype || "no content type"} (HTTP ${ans.status}): ${snippet(ans.text)}`,
        { status: ans.status, code: "not_json" });
    }
    try {
      return JSON.parse(ans.text);
    } catch (e) {
      throw new ProtocolError(`${what}: the answer is not valid JSON (${(e as Error).message}): ${snippet(ans.text)}`,
        { status: ans.status, code: "not_json" });
    }
  }

  /** @internal */
  session(ans: Answer, what: string): Session {
    const s = this.json(ans, what) as Session;
    if (!s || typeof s !== "object" || typeof s.id !== "string" || typeof s.status !== "string") {
      throw new ProtocolError(`${what}: not a session (an object with string id and status): ${snippet(ans.text)}`,
        { status: ans.status, code: "not_a_session" });
    }
    return s;
  }

  /** @internal */
  async getIn(id: string, d: Deadline): Promise<Session> {
    const path = `/sessions/${Client.sid(id)}`;
    return this.session(await this.call("GET", path, d), `GET ${path}`);
  }

  private waitFields(body: Record<string, unknown>, wait: boolean, d: Deadline): void {
    body.wait = wait;
    if (wait) body.wait_ms = Math.max(0, Math.min(this.waitMs, Math.floor(d.left) - 1000));
  }

  private async settle(s: Session, d: Deadline): Promise<Session> {
    let delay = 50;
    while (!SETTLED.has(s.status)) {
      try {
        if (d.left <= 0) throw new Timeout("late", { code: "timeout" });
        await d.sleep(Math.min(delay, d.left));
        delay = Math.min(delay * 2, 1000);
        s = await this.getIn(s.id, d);
      } catch (e) {
        if (!(e instanceof Timeout) && !(d.signal.aborted && d.signal.reason instanceof Timeout)) throw e;
        throw new Timeout(`session ${s.id} is still ${s.status}: it did not settle within the timeout; get it later, or give a longer timeout`,
          { code: "timeout", sessionId: s.id });
      }
    }
    return s;
  }

  /** @internal */
  async resume(id: string, route: string, body: Record<string, unknown>, opts: ResumeOptions): Promise<Session> {
    const wait = opts.wait ?? true;
    const path = `/sessions/${Client.sid(id)}/${route}`;
    return this.withDeadline(opts, async (d) => {
      this.waitFields(body, wait, d);
      const s = this.session(await this.call("POST", path, d, { body, ok: [200, 202] }), `POST ${path}`);
      return wait ? this.settle(s, d) : s;
    });
  }

  private async openStream(method: string, path: string, d: Deadline, body: string | undefined,
                           headers: Record<string, string>): Promise<TransportResponse> {
    const what = `${method} ${path}`;
    for (let attempt = 0; ; attempt++) {
      const res = await this.send(method, path, d, body, { ...headers, Accept: "text/event-stream" });
      if (res.status === 200 || res.status === 201) {
        const ctype = (res.header("Content-Type") ?? "").split(";")[0].trim().toLowerCase();
        if (ctype !== "text/event-stream") {
          const text = await this.readAll(res, what, d).catch(() => "");
          throw new ProtocolError(`${what}: expected an event stream, got ${ctype || "no content type"} (HTTP ${res.status}): ${snippet(text)}`,
            { status: res.status, code: "not_event_stream" });
        }
        return res;
      }
      const text = await this.readAll(res, what, d).catch(() => "");
      const ra = retryAfter(res.header("Retry-After"));
      const err = this.error(what, res.status, res.statusText, res.header("Content-Type"), text, ra);
      if ((res.status === 429 || res.status === 503) && attempt < this.retries) {
        const wait = this.backoff(attempt, ra);
        if (wait < d.left) { await d.sleep(wait); continue; }
      }
      throw err;
    }
  }

  private async *eventLoop(id: string, lastId: number | null, d: Deadline,
                           first: TransportResponse | null): AsyncGenerator<ChidoriEvent> {
    const path = `/sessions/${Client.sid(id)}/events`;
    let last: ChidoriEvent | null = null;
    let idleReopens = 0;
    for (;;) {
      let res = first;
      first = null;
      if (!res) res = await this.openStream("GET", path, d, undefined, lastId !== null ? { "Last-Event-ID": String(lastId) } : {});
      let progressed = false;
      try {
        for await (const ev of this.readEvents(res, path, d)) {
          progressed = true;
          if (ev.id !== null) lastId = ev.id;
          last = ev;
          yield ev;
        }
      } finally {
        res.cancel();
      }
      if (last && (last.event === "done" || (last.event === "status" && PAUSED.has(last.data.status)))) return;
      // Ended before the end: settled meanwhile, or cut (reopened after the last event).
      if (!progressed) {
        const s = await this.getIn(id, d);
        if (SETTLED.has(s.status)) return;
        if (++idleReopens > 3) {
          throw new ProtocolError(`the event stream of session ${id} ended ${idleReopens} times without an event while it is ${s.status}`,
            { code: "truncated", sessionId: id });
        }
        await d.sleep(Math.min(200 * idleReopens, Math.max(0, d.left)));
      } else {
        idleReopens = 0;
      }
    }
  }

  private async *readEvents(res: TransportResponse, what: string, d: Deadline): AsyncGenerator<ChidoriEvent> {
    const parser = new SSEParser();
    const it = res.chunks()[Symbol.asyncIterator]();
    try {
      yield* this.parseEvents(it, parser, what, d);
    } finally {
      await it.return?.()?.catch(() => {});
    }
  }

  private async *parseEvents(it: AsyncIterator<Uint8Array>, parser: SSEParser, what: string,
                             d: Deadline): AsyncGenerator<ChidoriEvent> {
    for (;;) {
      let r: IteratorResult<Uint8Array>;
      try {
        r = await it.next();
      } catch (e) {
        if (d.signal.aborted) throw d.fail(e, what);
        return; // cut: the caller reopens
      }
      if (r.done) return;
      let raws;
      try {
        raws = parser.feed(r.value);
      } catch (e) {
        throw new ProtocolError(`${what}: ${(e as Error).message}`, { code: "too_large" });
      }
      for (const raw of raws) {
        if (!EVENT_TYPES.has(raw.event)) continue;
        let data: unknown;
        try {
          data = JSON.parse(raw.data);
        } catch (e) {
          throw new ProtocolError(`${what}: event ${JSON.stringify(raw.event)} (id ${raw.id}) is not chidori's JSON: ${(e as Error).message}`,
            { code: "not_json" });
        }
        const n = raw.id === null ? null : Number(raw.id);
        yield { id: n !== null && Number.isInteger(n) ? n : null, event: raw.event, data } as ChidoriEvent;
      }
    }
  }
}
