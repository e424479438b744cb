/** The errors of the chidori client: one hierarchy under ChidoriError. */

export interface ErrorFields {
  /** The HTTP status, or undefined when no answer came. */
  status?: number;
  /** The server's code (`queue_full`, `not_found`, ...) or a local one (`unreachable`, `timeout`, ...). */
  code?: string;
  /** Seconds the server asked to wait (Retry-After). */
  retryAfter?: number;
  /** The session concerned, when known (a `run` that timed out). */
  sessionId?: string;
}

/** Any failure of a call to `chidori serve`. */
export class ChidoriError extends Error {
  readonly status?: number;
  readonly code?: string;
  readonly retryAfter?: number;
  readonly sessionId?: string;
  constructor(message: string, fields: ErrorFields = {}) {
    super(message);
    this.name = new.target.name;
    this.status = fields.status;
    this.code = fields.code;
    this.retryAfter = fields.retryAfter;
    this.sessionId = fields.sessionId;
  }
}

/** 400 (and 405, 413): a malformed request. */
export class BadRequest extends ChidoriError {}
/** 401: no token or an unknown one. */
export class Unauthorized extends ChidoriError {}
/** 404: no such route or session (or another tenant's). */
export class NotFound extends ChidoriError {}
/** 409: the session is not in a state for this. */
export class Conflict extends ChidoriError {}
/** 429: the server's queue is full; `retryAfter` says when to try again. */
export class TooManyRequests extends ChidoriError {}
/** 503 (draining, unavailable), another 5xx, or a server that cannot be reached. */
export class Unavailable extends ChidoriError {}
/** The client's own timeout passed. */
export class Timeout extends ChidoriError {}
/** The answer is not what chidori serve sends: not JSON, HTML from a proxy, a stream cut for good. */
export class ProtocolError extends ChidoriError {}

/** The error class of an HTTP error status. */
export function errorForStatus(status: number): typeof ChidoriError {
  switch (status) {
    case 400: case 405: case 413: return BadRequest;
    case 401: return Unauthorized;
    case 404: return NotFound;
    case 409: return Conflict;
    case 429: return TooManyRequests;
    case 503: return Unavailable;
  }
  if (status >= 400 && status < 500) return BadRequest;
  if (status >= 500) return Unavailable;
  return ProtocolError;
}
