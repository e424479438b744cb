// A nested agent: a fresh box inside the caller's budget.
function main(input) {
  return chidori.callAgent("./child.js", { n: input.n }).then(function (r) { return { nested: r }; });
}
