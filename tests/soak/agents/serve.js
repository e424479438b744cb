// The agent the soak's one long-lived `chidori serve` serves: input.kind picks what a session does.
function main(input) {
  switch (input.kind) {
    case "ok": return chidori.template("ok {{n}}", { n: input.n }).then(function (t) { chidori.log(t); return { ok: true, n: input.n }; });
    case "throw": throw new Error("soak boom " + input.n);
    case "fetch": return fetch(input.url).then(function (r) { return r.text(); }).then(function (t) { return { text: t }; });
    case "nested": return chidori.callAgent("./child.js", { n: input.n }).then(function (r) { return { nested: r }; });
    case "tool": return chidori.tool("upper", { text: "soak " + input.n }).then(function (r) { return { tool: r }; });
    case "input": return chidori.input("name?").then(function (v) { return { hello: v }; });
    case "memory": return chidori.memory.set("k", input.n).then(function () { return chidori.memory.get("k"); });
    case "sleep": return new Promise(function (r) { setTimeout(function () { r("woke"); }, 30000); });
    case "bomb": { const keep = []; for (let i = 0; ; i++) keep.push(new Array(100000).fill(i)); }
  }
  throw new Error("unknown kind " + input.kind);
}
