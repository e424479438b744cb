/** @chidori/client: the TypeScript client of `chidori serve` (zero runtime dependencies). */
export { Client, Sessions } from "./client.js";
export type {
  ClientOptions, CallOptions, RunOptions, ResumeOptions, ApproveOptions, ListOptions, StreamOptions, EventsOptions,
} from "./client.js";
export {
  ChidoriError, BadRequest, Unauthorized, NotFound, Conflict, TooManyRequests, Unavailable, Timeout, ProtocolError,
} from "./errors.js";
export type { ErrorFields } from "./errors.js";
export { SETTLED } from "./types.js";
export type {
  Session, SessionStatus, SessionError, SessionStats, PendingApproval, PendingInput, ReplayResult, ChidoriEvent,
  StatusEvent, DoneEvent, ApprovalEvent, InputEvent, LogEvent, CallEvent,
} from "./types.js";
