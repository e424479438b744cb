// Starting a real `chidori serve` for the tests (stopped by its PID), and small
// misbehaving servers for the bad-answer cases (HTML, cut streams, silence):
// what a reverse proxy or a broken network gives, never a real chidori serve.
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, openSync, closeSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
export const AGENT = path.join(REPO, "sdk/testdata/agent.js");
const BIN = process.env.CHIDORI_BIN || path.join(REPO, "build/chidori");

export async function startServer({ args = [], unix = false, env = {}, agent = AGENT } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "chidori-sdk-ts."));
  mkdirSync(path.join(dir, "ws"));
  const listen = unix ? `unix:${path.join(dir, "serve.sock")}` : "127.0.0.1:0";
  const errPath = path.join(dir, "server.err");
  const errFd = openSync(errPath, "w");
  const fullEnv = { ...process.env, ...env };
  if (!("CHIDORI_SERVE_TOKEN" in env)) delete fullEnv.CHIDORI_SERVE_TOKEN;
  const proc = spawn(BIN, ["serve", agent, "--listen", listen, "--state-dir", path.join(dir, "st"),
    "--workspace", path.join(dir, "ws"), "--grace", "0", "--trusted", ...args],
    { stdio: ["ignore", "ignore", errFd], env: fullEnv });
  closeSync(errFd);
  let exited = false;
  const exitP = new Promise((r) => proc.on("exit", () => { exited = true; r(); }));
  const stop = async () => {
    if (!exited) {
      proc.kill("SIGTERM");
      const t = setTimeout(() => { if (!exited) proc.kill("SIGTERM"); }, 5000);
      const t2 = setTimeout(() => { if (!exited) proc.kill("SIGKILL"); }, 15000);
      await exitP;
      clearTimeout(t); clearTimeout(t2);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20000;
  for (;;) {
    const text = readFileSync(errPath, "utf8");
    const m = /^Listening: (\S+)$/m.exec(text);
    if (m) return { url: m[1], dir, stop, stderr: () => readFileSync(errPath, "utf8") };
    if (exited || Date.now() > deadline) { await stop(); throw new Error(`chidori serve did not start: ${text}`); }
    await new Promise((r) => setTimeout(r, 50));
  }
}

// A loopback TCP server handing each connection and its request head to handler(sock, head).
export async function rawServer(handler) {
  const requests = [];
  const socks = new Set();
  const srv = net.createServer((sock) => {
    socks.add(sock);
    sock.on("close", () => socks.delete(sock));
    sock.on("error", () => {});
    let head = "";
    const onData = (b) => {
      head += b.toString("latin1");
      if (head.includes("\r\n\r\n")) {
        sock.off("data", onData);
        requests.push(head);
        handler(sock, head);
      }
    };
    sock.on("data", onData);
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    requests,
    stop: () => new Promise((r) => { for (const s of socks) s.destroy(); srv.close(() => r()); }),
  };
}

export function answer(status, ctype, body, extra = "") {
  return `HTTP/1.1 ${status}\r\nContent-Type: ${ctype}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n${extra}\r\n${body}`;
}
