#!/usr/bin/env node
// A supervised session: print the pending approval, approve it, print the result.
//   chidori serve sdk/examples/note.js --trusted --workspace /tmp/ws --listen 127.0.0.1:8080 &
//   node sdk/typescript/examples/supervised.mjs [BASE_URL]      (after npm run build)
import { Client, ChidoriError } from "@chidori/client";

const client = new Client({ baseUrl: process.argv[2] ?? "http://127.0.0.1:8080", timeoutMs: 60000 });
try {
  let session = await client.run({ text: "buy milk" }, { policyProfile: "supervised" });
  while (session.status === "awaitingapproval") {
    const ask = session.pending_approval;
    console.log(`pending approval ${ask.id}: ${ask.target} ${ask.args.path}`);
    console.log(`  reason: ${ask.reason}`);
    session = await client.sessions.approve(session.id, "allow", { approvalId: ask.id });
    console.log("approved");
  }
  if (session.status === "done") console.log(`session ${session.id} done: ${JSON.stringify(session.result)}`);
  else console.log(`session ${session.id} ${session.status}: ${JSON.stringify(session.error)}`);
  process.exitCode = session.status === "done" ? 0 : 1;
} catch (e) {
  if (!(e instanceof ChidoriError)) throw e;
  console.error(`supervised.mjs: ${e.message} (${e.status ?? "no HTTP answer"}, ${e.code ?? "no code"})`);
  process.exitCode = 1;
} finally {
  client.close();
}
