// The package: `npm pack` gives a publishable tarball (dist + d.ts + README), and
// its declarations type-check a consumer's TypeScript.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const PKG = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

test("npm pack: dist, declarations, README and package.json only", () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "chidori-sdk-pack."));
  try {
    const out = execFileSync("npm", ["pack", "--json", "--pack-destination", tmp], { cwd: PKG, encoding: "utf8" });
    const [info] = JSON.parse(out.slice(out.indexOf("[")));
    assert.equal(info.name, "@chidori/client");
    const files = info.files.map((f) => f.path).sort();
    for (const f of ["README.md", "package.json", "dist/index.js", "dist/index.d.ts", "dist/client.js", "dist/client.d.ts"]) {
      assert.ok(files.includes(f), `${f} is not in the tarball: ${files}`);
    }
    assert.ok(!files.some((f) => f.startsWith("src/") || f.startsWith("test/") || f.startsWith("node_modules/")), `${files}`);
    // The tarball works where it is unpacked: an ES module import of it.
    execFileSync("tar", ["-xzf", path.join(tmp, info.filename), "-C", tmp]);
    const r = spawnSync(process.execPath, ["--input-type=module", "-e",
      `import { Client, Conflict, ChidoriError } from ${JSON.stringify(path.join(tmp, "package", "dist", "index.js"))};
       console.log(typeof Client, new Conflict("x", { status: 409 }) instanceof ChidoriError);`], { encoding: "utf8" });
    assert.equal(r.stdout.trim(), "function true", r.stderr);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test("the declarations type-check a consumer, events narrowed by their type", () => {
  const tmp = mkdtempSync(path.join(PKG, ".typecheck."));
  try {
    writeFileSync(path.join(tmp, "use.ts"), `
import { Client, TooManyRequests, type Session, type ChidoriEvent } from "../dist/index.js";
async function main(): Promise<void> {
  const c = new Client({ baseUrl: "unix:/run/chidori.sock", timeoutMs: 1000 });
  const s: Session = await c.run({ a: 1 }, { policyProfile: "untrusted", wait: true, signal: new AbortController().signal });
  if (s.pending_approval) await c.sessions.approve(s.id, "allow", { approvalId: s.pending_approval.id });
  for await (const e of c.events(s.id)) {
    const ev: ChidoriEvent = e;
    if (ev.event === "log") { const m: string = ev.data.message; void m; }
    if (ev.event === "done") { const st: string = ev.data.status; void st; }
  }
  try { await c.health(); } catch (e) { if (e instanceof TooManyRequests) { const r: number | undefined = e.retryAfter; void r; } }
}
void main;
`);
    writeFileSync(path.join(tmp, "bad.ts"), `
import { Client } from "../dist/index.js";
void new Client().sessions.approve("s1", "maybe");
`);
    const tsc = path.join(PKG, "node_modules", "typescript", "bin", "tsc");
    const args = ["--noEmit", "--strict", "--module", "NodeNext", "--moduleResolution", "NodeNext", "--target", "ES2020",
      "--lib", "ES2020,DOM", "--types", "node"];
    let r = spawnSync(process.execPath, [tsc, ...args, path.join(tmp, "use.ts")], { encoding: "utf8", cwd: PKG });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    // Not vacuous: a wrong decision is a type error.
    r = spawnSync(process.execPath, [tsc, ...args, path.join(tmp, "bad.ts")], { encoding: "utf8", cwd: PKG });
    assert.notEqual(r.status, 0);
    assert.match(r.stdout, /"maybe"/);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
