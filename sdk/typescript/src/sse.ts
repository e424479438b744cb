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
  private afterCR = false;

  constructor(readonly maxEvent: number = 64 << 20) {}

  /** True between the first field of an event and the blank line that ends it. */
  get inEvent(): boolean { return this.pending || this.buf.length > 0; }

  /** The events the bytes complete, however the stream is cut: lines end with LF, CRLF or a
   * lone CR (a byte-order mark at the start is dropped by the decoder). Throws RangeError past
   * maxEvent. */
  feed(chunk: Uint8Array): RawEvent[] {
    let text = this.decoder.decode(chunk, { stream: true });
    if (this.afterCR && text.length > 0) {
      this.afterCR = false;
      if (text[0] === "\n") text = text.slice(1);
    }
    this.buf += text;
    const out: RawEvent[] = [];
    let at = 0, cr = -2, lf = -2; // the next CR and LF at or after `at` (-1: none; -2: not looked for)
    for (;;) {
      if (cr !== -1 && cr < at) cr = this.buf.indexOf("\r", at);
      if (lf !== -1 && lf < at) lf = this.buf.indexOf("\n", at);
      if (cr < 0 && lf < 0) break;
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      const line = this.buf.slice(at, end);
      at = end + 1;
      if (this.buf[end] === "\r") {
        if (at < this.buf.length) {
          if (this.buf[at] === "\n") at++;
        } else {
          this.afterCR = true; // an LF in the next chunk belongs to this CR
        }
      }
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    this.buf = this.buf.slice(at);
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
