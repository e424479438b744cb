/** A small parser of server-sent events (text/event-stream), fed bytes. */

export interface RawEvent { id: string | null; event: string; data: string }

export class SSEParser {
  lastId: string | null = null;
  private decoder = new TextDecoder("utf-8");
  private buf = "";
  private event = "";
  private data: string[] = [];
  private size = 0;
  private pending = false;

  constructor(readonly maxEvent: number = 64 << 20) {}

  /** True between the first field of an event and the blank line that ends it. */
  get inEvent(): boolean { return this.pending || this.buf.length > 0; }

  /** The events the bytes complete. Throws RangeError past maxEvent. */
  feed(chunk: Uint8Array): RawEvent[] {
    this.buf += this.decoder.decode(chunk, { stream: true });
    const out: RawEvent[] = [];
    for (;;) {
      const nl = this.buf.indexOf("\n");
      if (nl < 0) break;
      let line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    if (this.buf.length > this.maxEvent) throw new RangeError(`an event of the stream is larger than ${this.maxEvent} bytes`);
    return out;
  }

  private line(text: string): RawEvent | null {
    if (text === "") return this.dispatch();
    if (text.startsWith(":")) return null;
    this.size += text.length;
    if (this.size > this.maxEvent) throw new RangeError(`an event of the stream is larger than ${this.maxEvent} bytes`);
    const colon = text.indexOf(":");
    const name = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    this.pending = true;
    if (name === "data") this.data.push(value);
    else if (name === "event") this.event = value;
    else if (name === "id" && !value.includes("\0")) this.lastId = value;
    return null;
  }

  private dispatch(): RawEvent | null {
    const data = this.data, event = this.event;
    this.data = []; this.event = ""; this.size = 0; this.pending = false;
    if (data.length === 0) return null;
    return { id: this.lastId, event: event || "message", data: data.join("\n") };
  }
}
