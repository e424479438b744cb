// An ordinary agent: memory (one fixed key, so the store does not grow), a template, a log line.
function main(input) {
  return chidori.memory.get("soak-runs").then(function (n) {
    return chidori.memory.set("soak-runs", (n || 0) + 1).then(function () {
      chidori.log("soak ok " + input.n);
      return chidori.template("ok {{n}}", { n: input.n }).then(function (t) { return { ok: true, n: input.n, t: t }; });
    });
  });
}
