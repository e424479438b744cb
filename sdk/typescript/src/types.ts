/** What chidori serve answers, with the wire's field names (docs/serve.md). */

export type SessionStatus =
  | "queued" | "running" | "awaitingapproval" | "awaitinginput" | "done" | "failed" | "cancelled";

export interface SessionError { name: string; message: string }
export interface PendingApproval { id: number; target: string; args: unknown; reason: string }
export interface PendingInput { prompt: unknown }
export interface SessionStats { wall_ms: number; cpu_ms: number; peak_bytes: number; effects: number }

/** A session as the server answers it; `result` is passed through untouched. */
export interface Session {
  id: string;
  status: SessionStatus;
  agent?: string;
  policy_profile?: string | null;
  tenant?: string;
  created_at?: string;
  updated_at?: string;
  result?: unknown;
  exit?: number;
  stats?: SessionStats;
  error?: SessionError;
  pending_approval?: PendingApproval;
  pending_input?: PendingInput;
  [field: string]: unknown;
}

export interface ReplayResult { matched: boolean; result?: unknown; error?: SessionError }

/** The statuses of a session that is neither queued nor running. */
export const SETTLED: ReadonlySet<string> =
  new Set(["awaitingapproval", "awaitinginput", "done", "failed", "cancelled"]);

interface EventBase { /** The event's sequence number in its session, from 1. */ id: number | null }
export interface StatusEvent extends EventBase { event: "status"; data: Session }
export interface DoneEvent extends EventBase { event: "done"; data: Session }
export interface ApprovalEvent extends EventBase { event: "approval"; data: PendingApproval }
export interface InputEvent extends EventBase { event: "input"; data: PendingInput }
export interface LogEvent extends EventBase { event: "log"; data: { level: "info" | "warn"; message: string } }
export interface CallEvent extends EventBase { event: "call"; data: { id: number; op: string; decision: "allow" | "deny" | "pending" } }

/** One server-sent event of a session; events of other types are skipped. */
export type ChidoriEvent = StatusEvent | DoneEvent | ApprovalEvent | InputEvent | LogEvent | CallEvent;

export const EVENT_TYPES: ReadonlySet<string> = new Set(["status", "done", "approval", "input", "log", "call"]);
