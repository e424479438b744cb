/** HTTP for the client: global fetch for http(s) URLs (Node >= 18 and
 * browsers), node:http's socketPath for `unix:` (fetch cannot reach a unix
 * socket; node:http is imported only then, so browsers never load it). */

export interface TransportRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export interface TransportResponse {
  status: number;
  statusText: string;
  header(name: string): string | null;
  /** The body, chunk by chunk (read it once). */
  chunks(): AsyncIterable<Uint8Array>;
  /** Stops reading the body and frees the connection. */
  cancel(): void;
}

export type Transport = (req: TransportRequest) => Promise<TransportResponse>;

export function fetchTransport(base: string, fetchImpl: typeof fetch): Transport {
  return async (req) => {
    const res = await fetchImpl(base + req.path, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      signal: req.signal,
    });
    return {
      status: res.status,
      statusText: res.statusText,
      header: (name) => res.headers.get(name),
      chunks: () => readStream(res.body),
      cancel: () => { res.body?.cancel().catch(() => {}); },
    };
  };
}

async function* readStream(body: ReadableStream<Uint8Array> | null): AsyncIterable<Uint8Array> {
  if (!body) return;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      if (value) yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** What unixTransport needs of node:http (typed here so browsers' builds need no @types/node). */
interface NodeHttp {
  Agent: new (opts: { keepAlive: boolean }) => { destroy(): void };
  request: (opts: object, cb: (res: NodeIncoming) => void) => NodeClientRequest;
}
interface NodeIncoming extends AsyncIterable<Uint8Array> {
  statusCode?: number;
  statusMessage?: string;
  headers: Record<string, string | string[] | undefined>;
  destroy(): void;
}
interface NodeClientRequest {
  on(ev: "error", cb: (e: Error) => void): void;
  end(body?: string): void;
  destroy(): void;
}

export function unixTransport(socketPath: string): { transport: Transport; close(): void } {
  let http: NodeHttp | undefined;
  let agent: { destroy(): void } | undefined;
  const transport: Transport = async (req) => {
    if (!http) {
      const spec = "node:http";
      http = (await import(spec)) as NodeHttp;
      agent = new http.Agent({ keepAlive: true });
    }
    const h = http;
    return new Promise<TransportResponse>((resolve, reject) => {
      const headers: Record<string, string> = { ...req.headers, Host: "localhost" };
      if (req.body !== undefined) headers["Content-Length"] = String(new TextEncoder().encode(req.body).length);
      const cr = h.request({ socketPath, path: req.path, method: req.method, headers, agent, signal: req.signal },
        (res) => {
          resolve({
            status: res.statusCode ?? 0,
            statusText: res.statusMessage ?? "",
            header: (name) => {
              const v = res.headers[name.toLowerCase()];
              return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
            },
            chunks: () => res,
            cancel: () => res.destroy(),
          });
        });
      cr.on("error", reject);
      cr.end(req.body);
    });
  };
  return { transport, close: () => agent?.destroy() };
}
